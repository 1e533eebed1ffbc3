/**
 * MigrationPolicy selection and the effective migration configuration (upstream's
 * migrationpolicy_test.go cases: most matching labels, then more VMI labels, then name).
 */
import { describe, expect, it } from 'vitest';
import type { MigrationPolicy } from '../../../../src/api/generated/types';
import {
  clusterMigrationOptions,
  effectiveMigrationConfiguration,
  matchMigrationPolicy,
  withMigrationPolicy,
} from '../../../../src/controllers/virt-controller/migration/policy';

const policy = (
  name: string,
  vmi?: Record<string, string>,
  ns?: Record<string, string>,
  spec: Partial<MigrationPolicy['spec']> = {},
): MigrationPolicy => ({
  metadata: { name },
  spec: {
    selectors: {
      ...(vmi ? { virtualMachineInstanceSelector: vmi } : {}),
      ...(ns ? { namespaceSelector: ns } : {}),
    },
    ...spec,
  },
});
const names = (p?: MigrationPolicy) => p?.metadata?.name;

describe('matchMigrationPolicy', () => {
  const vmiLabels = { app: 'db', tier: 'gold', zone: 'a' };
  const nsLabels = { team: 'x', env: 'prod' };

  it('needs every selector label to match; none matching: no policy', () => {
    expect(names(matchMigrationPolicy([policy('p', { app: 'web' })], vmiLabels, nsLabels))).toBeUndefined();
    expect(
      names(matchMigrationPolicy([policy('p', { app: 'db' }, { env: 'dev' })], vmiLabels, nsLabels)),
    ).toBeUndefined();
    expect(names(matchMigrationPolicy([policy('p', { nope: 'x' })], undefined, nsLabels))).toBeUndefined();
  });

  it('the policy matching the most labels wins, VMI and namespace labels counted together', () => {
    const ps = [
      policy('one', { app: 'db' }),
      policy('three', { app: 'db' }, { team: 'x', env: 'prod' }),
      policy('two', { app: 'db', tier: 'gold' }),
    ];
    expect(names(matchMigrationPolicy(ps, vmiLabels, nsLabels))).toBe('three');
  });

  it('equal counts: more VMI labels wins; then the lexicographically first name', () => {
    const ns2 = policy('a-ns', undefined, { team: 'x', env: 'prod' });
    const vmi2 = policy('z-vmi', { app: 'db', zone: 'a' });
    expect(names(matchMigrationPolicy([ns2, vmi2], vmiLabels, nsLabels))).toBe('z-vmi');
    expect(
      names(
        matchMigrationPolicy(
          [policy('b', { app: 'db' }), policy('a', { tier: 'gold' })],
          vmiLabels,
          nsLabels,
        ),
      ),
    ).toBe('a');
  });

  it('empty selectors match every VMI with score 0; a policy without selectors matches none', () => {
    expect(names(matchMigrationPolicy([policy('all')], vmiLabels, nsLabels))).toBe('all');
    expect(
      names(matchMigrationPolicy([policy('all'), policy('db', { app: 'db' })], vmiLabels, nsLabels)),
    ).toBe('db');
    const none = { metadata: { name: 'none' }, spec: {} } as MigrationPolicy;
    expect(names(matchMigrationPolicy([none], vmiLabels, nsLabels))).toBeUndefined();
  });
});

describe('the effective configuration', () => {
  const cluster = {
    parallelMigrationsPerCluster: 5,
    parallelOutboundMigrationsPerNode: 2,
    bandwidthPerMigration: '0Mi',
    completionTimeoutPerGiB: 150,
    progressTimeout: 150,
    allowAutoConverge: false,
    allowPostCopy: false,
    unsafeMigrationOverride: false,
  };

  it("is the cluster's migration configuration without a policy", async () => {
    expect(
      await effectiveMigrationConfiguration({ metadata: {}, spec: { domain: { devices: {} } } }, cluster, []),
    ).toEqual({
      configuration: cluster,
    });
    expect(clusterMigrationOptions({ ...cluster, disableTLS: true })).toEqual({
      ...cluster,
      disableTLS: true,
    });
  });

  it("takes the policy's set fields; allowPostCopy alone sets allowWorkloadDisruption too (upstream)", () => {
    expect(
      withMigrationPolicy(clusterMigrationOptions(cluster), {
        selectors: {},
        bandwidthPerMigration: '64Mi',
        completionTimeoutPerGiB: 10,
        allowPostCopy: true,
      }),
    ).toEqual({
      ...cluster,
      bandwidthPerMigration: '64Mi',
      completionTimeoutPerGiB: 10,
      allowPostCopy: true,
      allowWorkloadDisruption: true,
    });
    expect(
      withMigrationPolicy(clusterMigrationOptions(cluster), {
        selectors: {},
        allowPostCopy: true,
        allowWorkloadDisruption: false,
      }),
    ).toMatchObject({ allowPostCopy: true, allowWorkloadDisruption: false });
  });

  it("names the policy matched by the VMI's and its namespace's labels (the namespace read only with policies)", async () => {
    const asked: string[] = [];
    const nsLabels = async (ns: string) => {
      asked.push(ns);
      return { env: 'prod' };
    };
    const vmi = { metadata: { namespace: 'ns1', labels: { app: 'db' } }, spec: { domain: { devices: {} } } };
    const r = await effectiveMigrationConfiguration(
      vmi,
      cluster,
      [
        policy('slow', { app: 'db' }, { env: 'prod' }, { bandwidthPerMigration: '32Mi' }),
        policy('other', { app: 'web' }),
      ],
      nsLabels,
    );
    expect(r).toEqual({ configuration: { ...cluster, bandwidthPerMigration: '32Mi' }, policyName: 'slow' });
    expect(asked).toEqual(['ns1']);
    await effectiveMigrationConfiguration(vmi, cluster, [], nsLabels);
    expect(asked).toEqual(['ns1']);
  });
});
