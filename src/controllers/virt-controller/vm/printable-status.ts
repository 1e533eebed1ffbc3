/**
 * `status.printableStatus` of a VirtualMachine, as upstream's setPrintableStatus: a list
 * of predicates in precedence order, first match wins, Unknown otherwise.
 */

/** The printable statuses (upstream VirtualMachinePrintableStatus values). */
export const PrintableStatus = {
  Stopped: 'Stopped',
  Provisioning: 'Provisioning',
  Starting: 'Starting',
  Running: 'Running',
  Paused: 'Paused',
  Stopping: 'Stopping',
  Terminating: 'Terminating',
  CrashLoopBackOff: 'CrashLoopBackOff',
  Migrating: 'Migrating',
  Unknown: 'Unknown',
  ErrorUnschedulable: 'ErrorUnschedulable',
  ErrImagePull: 'ErrImagePull',
  ImagePullBackOff: 'ImagePullBackOff',
  ErrorPvcNotFound: 'ErrorPvcNotFound',
  DataVolumeError: 'DataVolumeError',
  WaitingForVolumeBinding: 'WaitingForVolumeBinding',
} as const;
export type PrintableStatusName = (typeof PrintableStatus)[keyof typeof PrintableStatus];

interface Condition {
  type: string;
  status: string;
  reason?: string;
}

/** What the printable status depends on. */
export interface PrintableStatusInput {
  vmDeleting: boolean;
  runStrategy: string;
  /** isSetToStart of the VM with this VMI. */
  setToStart: boolean;
  /** A VMI create is expected (expectations) but not yet observed. */
  startExpected: boolean;
  /** A VMI delete is expected but not yet observed. */
  stopExpected: boolean;
  consecutiveFailCount: number;
  vmi?: {
    phase?: string;
    deleting: boolean;
    conditions?: Condition[];
    /** status.migrationState present and not completed. */
    migrating: boolean;
  };
  /** A referenced PVC/DataVolume is still being provisioned. */
  provisioning?: boolean;
  /** A referenced DataVolume reports an error. */
  dataVolumeError?: boolean;
  /** A referenced PVC exists but is not bound. */
  unboundPvc?: boolean;
}

const FINAL = new Set(['Succeeded', 'Failed']);
const has = (conds: Condition[] | undefined, type: string, status: string, reason?: string) =>
  (conds ?? []).some(
    (c) => c.type === type && c.status === status && (reason === undefined || c.reason === reason),
  );

/** Computes printableStatus with upstream's precedence. */
export function printableStatus(s: PrintableStatusInput): PrintableStatusName {
  const vmi = s.vmi;
  const final = vmi !== undefined && FINAL.has(vmi.phase ?? '');
  const paused = has(vmi?.conditions, 'Paused', 'True');
  const syncFalse = (reason: string) => has(vmi?.conditions, 'Synchronized', 'False', reason);
  const checks: Array<[PrintableStatusName, () => boolean]> = [
    [PrintableStatus.Terminating, () => s.vmDeleting],
    [PrintableStatus.Stopping, () => vmi !== undefined && !final && (vmi.deleting || s.stopExpected)],
    [PrintableStatus.Migrating, () => vmi?.migrating === true],
    [PrintableStatus.Paused, () => vmi?.phase === 'Running' && paused],
    [PrintableStatus.Running, () => vmi?.phase === 'Running' && !paused],
    [PrintableStatus.ErrorPvcNotFound, () => syncFalse('FailedPvcNotFound')],
    [PrintableStatus.DataVolumeError, () => s.dataVolumeError === true],
    [
      PrintableStatus.ErrorUnschedulable,
      () => has(vmi?.conditions, 'PodScheduled', 'False', 'Unschedulable'),
    ],
    [PrintableStatus.Provisioning, () => s.provisioning === true],
    [PrintableStatus.WaitingForVolumeBinding, () => s.setToStart && s.unboundPvc === true],
    [PrintableStatus.ErrImagePull, () => syncFalse('ErrImagePull')],
    [PrintableStatus.ImagePullBackOff, () => syncFalse('ImagePullBackOff')],
    [
      PrintableStatus.Starting,
      () =>
        vmi === undefined
          ? s.startExpected
          : ['', 'Pending', 'Scheduling', 'Scheduled'].includes(vmi.phase ?? ''),
    ],
    [
      PrintableStatus.CrashLoopBackOff,
      () =>
        (vmi === undefined || final) &&
        !s.startExpected &&
        s.consecutiveFailCount > 0 &&
        ['Always', 'RerunOnFailure', 'Once'].includes(s.runStrategy),
    ],
    [PrintableStatus.Stopped, () => (vmi !== undefined ? final : !s.startExpected)],
  ];
  for (const [name, test] of checks) if (test()) return name;
  return PrintableStatus.Unknown;
}
