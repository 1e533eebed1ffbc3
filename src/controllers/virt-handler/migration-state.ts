/**
 * The pure part of the handler's migration sync: `status.migrationState` from the source
 * launcher's report, the launcher's migration options from the cluster's configuration,
 * where the data stream goes, and the hand-off of the VMI to the target node.
 */
import type {
  MigrationConfiguration,
  VirtualMachineInstance,
  VirtualMachineInstanceMigrationState,
} from '../../api/generated/types';
import { Labels } from '../../api/labels';
import { MigrationLabels } from '../common/migration-labels';
import type { LauncherDomain, LauncherMigrationState } from '../launcher-protocol/domain-report';
import type { MigrationRequestOptions } from '../launcher-protocol/migration-options';

/** RFC 3339 to the second, as metav1.Time. */
export const rfc3339 = (t: string | Date) => new Date(t).toISOString().replace(/\.\d+Z$/, 'Z');

/** The source launcher's report for this migration, if it has one. */
export function sourceReport(
  ms: VirtualMachineInstanceMigrationState,
  domain: LauncherDomain | undefined,
): LauncherMigrationState | undefined {
  const m = domain?.migration;
  return m && m.role === 'source' && m.uid === ms.migrationUid ? m : undefined;
}

/**
 * `status.migrationState` with what the source launcher reports (upstream
 * setMigrationProgressStatus). `completed` is left to the hand-off (see migration-sync.ts),
 * except that a failed migration is completed and failed at once.
 */
export function withSourceReport(
  ms: VirtualMachineInstanceMigrationState,
  report: LauncherMigrationState | undefined,
): VirtualMachineInstanceMigrationState {
  const out = { ...ms };
  if (!report) return out;
  out.startTimestamp ??= rfc3339(report.startTimestamp);
  if (report.endTimestamp) out.endTimestamp ??= rfc3339(report.endTimestamp);
  if (report.abortStatus) out.abortStatus = report.abortStatus;
  out.mode = report.mode;
  if (report.failed) {
    out.failed = true;
    out.completed = true;
    if (report.failureReason) out.failureReason = report.failureReason;
  }
  return out;
}

/** MigrateVirtualMachine's options (upstream MigrationOptions) from the migration configuration. */
export function migrationOptions(
  cfg: MigrationConfiguration,
  ms: VirtualMachineInstanceMigrationState,
  targetXml: string | undefined,
): MigrationRequestOptions {
  // A migration policy's configuration (written by the controller) wins over the cluster's.
  const c = { ...cfg, ...(ms.migrationConfiguration ?? {}) };
  const o: MigrationRequestOptions = {
    Bandwidth: c.bandwidthPerMigration,
    ProgressTimeout: c.progressTimeout,
    CompletionTimeoutPerGiB: c.completionTimeoutPerGiB,
    UnsafeMigration: c.unsafeMigrationOverride ?? false,
    AllowAutoConverge: c.allowAutoConverge ?? false,
    AllowPostCopy: c.allowPostCopy ?? false,
    // upstream's backward compatibility: unset, it follows allowPostCopy.
    AllowWorkloadDisruption: c.allowWorkloadDisruption ?? c.allowPostCopy ?? false,
  };
  if (c.maxDowntimeMs !== undefined) o.MaxDowntimeMs = c.maxDowntimeMs;
  const addr = ms.targetNodeAddress ?? '';
  if (addr.includes('://')) o.TargetURI = addr;
  const dataHost = migrationDataHost(addr);
  if (dataHost) o.MigrateURI = `tcp://${dataHost}`;
  if (targetXml) o.TargetDomainXML = targetXml;
  return o;
}

/**
 * Where the migration data stream goes, from the target's address (upstream sends it to
 * targetNodeAddress too): the host of a host[:port] or of a remote libvirt URI, and
 * loopback for a daemon reached through a local unix socket (it runs on this host, and
 * the host name it would offer need not resolve here). Undefined: libvirt's choice.
 */
export function migrationDataHost(addr: string): string | undefined {
  if (!addr) return undefined;
  if (!addr.includes('://')) {
    const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/.exec(addr);
    return m?.[1];
  }
  const m = /^([a-z][a-z0-9.-]*)(?:\+([a-z0-9.-]+))?:\/\/([^/?]*)/.exec(addr);
  if (!m) return undefined;
  if (m[2] === 'unix') return '127.0.0.1';
  const host = m[3].replace(/^[^@]*@/, '').replace(/:\d+$/, '');
  return /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)$/.test(host) ? host : undefined;
}

/**
 * The VMI handed to the target node: upstream's migration ACK on the source. As upstream's
 * target (ackMigrationCompletion), `status.evacuationNodeName` is cleared: the VMI has
 * left the node it was evacuated from, and a later drain of its new node must be able to
 * mark it again (the eviction webhook answers "Evacuation in progress" while it is set).
 * Also as upstream's ack: the launcher image record (`status.launcherContainerImageVersion`,
 * the `kubevirt.io/outdatedLauncherImage` label) goes, so the workload updater does not see
 * the VMI outdated again before virt-controller records the target pod's image (it made
 * a second migration of an already moved VMI on the two-node cluster).
 */
export function handedOver(vmi: VirtualMachineInstance, ms: VirtualMachineInstanceMigrationState) {
  const next = structuredClone(vmi);
  const target = ms.targetNode ?? '';
  const labels: Record<string, string> = { ...(next.metadata?.labels ?? {}), [Labels.nodeName]: target };
  delete labels[MigrationLabels.targetNode];
  delete labels[Labels.outdatedLauncherImage];
  next.metadata = { ...next.metadata, labels };
  next.status = { ...next.status, nodeName: target, migrationState: { ...ms, completed: true } };
  delete next.status.evacuationNodeName;
  delete next.status.launcherContainerImageVersion;
  return next;
}
