/**
 * The KubeVirt CR's migration settings: limits and timeouts checked, the settings
 * kubevirt-ts does not implement refused with the reason (not accepted and ignored).
 */
import { describe, expect, it } from 'vitest';
import { validateKubeVirtConfiguration } from '../../../src/api/config/validate-configuration';
import { validateMigrationPolicy } from '../../../src/controllers/virt-api/migration-policy';

const errs = (migrations: object) =>
  validateKubeVirtConfiguration({ migrations }).map((e) => `${e.path}: ${e.message}`);

describe('spec.configuration.migrations', () => {
  it('accepts what takes effect', () => {
    expect(
      errs({
        parallelMigrationsPerCluster: 3,
        parallelOutboundMigrationsPerNode: 1,
        bandwidthPerMigration: '64Mi',
        completionTimeoutPerGiB: 0,
        progressTimeout: 30,
        allowAutoConverge: true,
        allowWorkloadDisruption: true,
        unsafeMigrationOverride: false,
        disableTLS: false,
        nodeDrainTaintKey: 'example.com/drain',
        allowPostCopy: true,
        maxDowntimeMs: 300,
        matchSELinuxLevelOnMigration: false,
      }),
    ).toEqual([]);
  });

  it('checks the limits, timeouts and bandwidth', () => {
    expect(
      errs({
        parallelMigrationsPerCluster: 0,
        parallelOutboundMigrationsPerNode: 1.5,
        progressTimeout: -1,
        bandwidthPerMigration: 'fast',
        maxDowntimeMs: 0,
      }),
    ).toEqual([
      'spec.configuration.migrations.parallelMigrationsPerCluster: Invalid value: 0: must be a whole number >= 1',
      'spec.configuration.migrations.parallelOutboundMigrationsPerNode: Invalid value: 1.5: must be a whole number >= 1',
      'spec.configuration.migrations.progressTimeout: Invalid value: -1: must be a whole number >= 0',
      'spec.configuration.migrations.maxDowntimeMs: Invalid value: 0: must be a whole number >= 1',
      'spec.configuration.migrations.bandwidthPerMigration: Invalid value: "fast": not a non-negative quantity',
    ]);
  });

  it('refuses the settings not implemented, naming each', () => {
    expect(
      errs({
        network: 'migration-net',
        matchSELinuxLevelOnMigration: true,
        utilityVolumesTimeout: 150,
      }),
    ).toEqual([
      'spec.configuration.migrations.network: spec.configuration.migrations.network is not supported by kubevirt-ts: a dedicated migration network is not implemented: migrations go through the pod network',
      "spec.configuration.migrations.matchSELinuxLevelOnMigration: spec.configuration.migrations.matchSELinuxLevelOnMigration is not supported by kubevirt-ts: SELinux levels of launcher pods are not managed (the target pod's level is the runtime's)",
      'spec.configuration.migrations.utilityVolumesTimeout: spec.configuration.migrations.utilityVolumesTimeout is not supported by kubevirt-ts: utility volumes are not implemented',
    ]);
  });
});

describe('MigrationPolicy spec', () => {
  const policy = (spec: object) =>
    validateMigrationPolicy({ metadata: { name: 'p' }, spec: { selectors: {}, ...spec } }).map(
      (e) => `${e.path}: ${e.message}`,
    );

  it('accepts what takes effect', () => {
    expect(
      policy({
        selectors: { virtualMachineInstanceSelector: { a: 'b' }, namespaceSelector: { c: 'd' } },
        bandwidthPerMigration: '64Mi',
        completionTimeoutPerGiB: 10,
        allowAutoConverge: true,
        allowWorkloadDisruption: true,
        allowPostCopy: false,
      }),
    ).toEqual([]);
  });

  it('accepts post-copy and a maximum downtime; refuses a downtime under 1 ms and the experimental options', () => {
    expect(policy({ allowPostCopy: true, maxDowntimeMs: 100 })).toEqual([]);
    expect(policy({ allowPostCopy: true, maxDowntimeMs: 0, experimental: { compression: 'zstd' } })).toEqual([
      'spec.maxDowntimeMs: must be a whole number >= 1 (milliseconds)',
      'spec.experimental: spec.experimental is not supported by kubevirt-ts: the experimental migration options (stall detector, downtime tuning, compression) are not implemented',
    ]);
  });
});
