/** The migration controller's Event reasons. */
export const MigrationEventReason = {
  SuccessfulCreate: 'SuccessfulCreate',
  FailedCreate: 'FailedCreate',
  SuccessfulHandOver: 'SuccessfulHandOver',
  SuccessfulMigration: 'SuccessfulMigration',
  FailedMigration: 'FailedMigration',
  MigrationTargetPodUnschedulable: 'migrationTargetPodUnschedulable',
  SuccessfulDelete: 'SuccessfulDelete',
  /** kubevirt-ts: the migration waits for a slot under the KubeVirt CR's migration limits. */
  WaitingForMigrationSlot: 'WaitingForMigrationSlot',
  /** upstream's: an evacuation (or workload update) migration waits after earlier ones failed. */
  MigrationBackoff: 'MigrationBackoff',
} as const;
