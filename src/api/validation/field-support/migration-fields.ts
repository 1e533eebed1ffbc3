/**
 * Which migration settings take effect and which validation refuses: the KubeVirt CR's
 * `spec.configuration.migrations` and a MigrationPolicy's `spec` (migrations.kubevirt.io).
 */
import type { FieldRegistry } from './registry-types';

/** `spec.configuration.migrations` of the KubeVirt CR. */
export const migrationConfigurationFieldSupport: FieldRegistry = {
  parallelMigrationsPerCluster: { effect: 'test/controllers/virt-controller/migration/limits.test.ts' },
  parallelOutboundMigrationsPerNode: {
    effect: 'test/controllers/virt-controller/migration/limits-embedded.test.ts',
  },
  bandwidthPerMigration: { effect: 'test/drivers/libvirt-driver/migration-test-driver.test.ts' },
  completionTimeoutPerGiB: { effect: 'test/controllers/virt-launcher/launcher-migration.test.ts' },
  progressTimeout: { effect: 'test/controllers/virt-launcher/launcher-migration.test.ts' },
  allowAutoConverge: { effect: 'test/drivers/libvirt-driver/migration-test-driver.test.ts' },
  allowWorkloadDisruption: { effect: 'test/controllers/virt-launcher/launcher-migration.test.ts' },
  unsafeMigrationOverride: { effect: 'test/drivers/libvirt-driver/migration-test-driver.test.ts' },
  disableTLS: { effect: 'test/controllers/virt-handler/migration-proxy.test.ts' },
  nodeDrainTaintKey: { effect: 'test/controllers/virt-controller/evacuation/controller.test.ts' },
  allowPostCopy: { effect: 'test/controllers/virt-launcher/launcher-migration.test.ts' },
  maxDowntimeMs: { effect: 'test/controllers/virt-launcher/launcher-migration.test.ts' },
  network: {
    refused: 'a dedicated migration network is not implemented: migrations go through the pod network',
  },
  matchSELinuxLevelOnMigration: {
    refused: "SELinux levels of launcher pods are not managed (the target pod's level is the runtime's)",
    allowed: [false],
  },
  utilityVolumesTimeout: { refused: 'utility volumes are not implemented' },
};

/** A MigrationPolicy's `spec`. */
export const migrationPolicyFieldSupport: FieldRegistry = {
  'selectors.**': { effect: 'test/controllers/virt-controller/migration/policy.test.ts' },
  bandwidthPerMigration: { effect: 'test/controllers/virt-controller/migration/limits-embedded.test.ts' },
  completionTimeoutPerGiB: { effect: 'test/controllers/virt-controller/migration/policy.test.ts' },
  allowAutoConverge: { effect: 'test/controllers/virt-controller/migration/policy.test.ts' },
  allowWorkloadDisruption: { effect: 'test/controllers/virt-controller/migration/policy.test.ts' },
  allowPostCopy: { effect: 'test/controllers/virt-controller/migration/policy.test.ts' },
  maxDowntimeMs: { effect: 'test/controllers/virt-controller/migration/policy.test.ts' },
  'experimental.**': {
    refused:
      'the experimental migration options (stall detector, downtime tuning, compression) are not implemented',
  },
};
