/** The restore controller's event reasons and condition messages (upstream's values). */

/** Event reasons and messages (upstream values). */
export const RestoreEvent = {
  Complete: 'VirtualMachineRestoreComplete',
  Error: 'VirtualMachineRestoreError',
  Failed: 'Operation failed',
  NotReady: 'RestoreTargetNotReady',
} as const;
export const RestoreMessage = {
  waitEventually:
    'Waiting for target VM to be powered off. Please stop the restore target to proceed with restore',
  waitGracePeriod:
    'Waiting for target VM to be powered off. Please stop the restore target to proceed with restore, or the operation will fail after 5m0s',
  gracePeriodExceeded:
    'Restore target failed to be ready within 5m0s. Please power off the target VM before attempting restore',
  stopTarget: 'Automatically stopping restore target for restore operation',
  vmiExists: 'Restore target VMI still exists, please stop the restore target to proceed with restore',
  failImmediate: 'Restore target VMI must be powered off before restore operation',
  existingTarget: 'restore source and restore target are different but restore target already exists',
} as const;
