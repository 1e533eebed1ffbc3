/**
 * The options of MigrateVirtualMachine: upstream's `cmdclient.MigrationOptions` as the
 * handler sends it (JSON with Go field names: Bandwidth, ProgressTimeout,
 * CompletionTimeoutPerGiB, UnsafeMigration, AllowAutoConverge, AllowPostCopy, ...) plus
 * four kubevirt-ts fields: `TargetURI` (the target daemon; by default
 * `qemu+tcp://<status.migrationState.targetNodeAddress>/system`), `MigrateURI` (where
 * the data stream goes; default: the target daemon's choice) and `TargetDomainXML`
 * (the domain the target launcher prepared in SyncMigrationTarget; without it the
 * source's own definition is sent, which is right only where both pods see the same
 * paths, as upstream's containers do), and `DisksURI` (a block migration's disk stream,
 * the migration proxy's 49153 socket: the local disks are copied, as upstream).
 */
import { status } from '@grpc/grpc-js';
import { parseQuantity, type VirtualMachineInstance } from '../../api';
import type { MigrationOptions } from '../../drivers/driver';
import { LauncherRpcError } from './rpc-error';

/** The JSON the handler sends (upstream names; every field optional). */
export interface MigrationRequestOptions {
  Bandwidth?: string | number;
  ProgressTimeout?: number;
  CompletionTimeoutPerGiB?: number;
  /** upstream's MaxDowntimeMs: the most the guest may be paused at switch-over (libvirt's max downtime). */
  MaxDowntimeMs?: number;
  UnsafeMigration?: boolean;
  AllowAutoConverge?: boolean;
  AllowPostCopy?: boolean;
  ParallelMigrationThreads?: number | null;
  AllowWorkloadDisruption?: boolean;
  /** kubevirt-ts: libvirt URI of the target daemon. */
  TargetURI?: string;
  /** kubevirt-ts: the domain XML the target launcher prepared. */
  TargetDomainXML?: string;
  /** kubevirt-ts: where the migration data stream goes (libvirt's migrate_uri). */
  MigrateURI?: string;
  /** kubevirt-ts: where a block migration's disk stream goes (libvirt's disks_uri). */
  DisksURI?: string;
}

/**
 * The volumes a block migration treats specially, as upstream's
 * classifyVolumesForMigration: claims and shared host disks are shared (never copied);
 * volumes the launcher generates are copied even when read-only.
 */
export function blockMigrationVolumes(vmi: VirtualMachineInstance): {
  shared: string[];
  generated: string[];
} {
  const shared: string[] = [];
  const generated: string[] = [];
  for (const v of vmi.spec.volumes ?? []) {
    if (v.persistentVolumeClaim || v.dataVolume || v.hostDisk?.shared) shared.push(v.name);
    else if (
      v.configMap ||
      v.secret ||
      v.downwardAPI ||
      v.serviceAccount ||
      v.cloudInitNoCloud ||
      v.cloudInitConfigDrive ||
      v.containerDisk
    )
      generated.push(v.name);
  }
  return { shared, generated };
}

/** A validated migration request. */
export interface MigrationPlan {
  /** The migration's UID (status.migrationState.migrationUid). */
  uid: string;
  targetUri: string;
  /** Domain XML for the target; empty: send the source's own. */
  targetXml: string;
  driver: MigrationOptions;
  /** Abort when the remaining data has not shrunk for this many seconds (0: never). */
  progressTimeoutSeconds: number;
  /** After this many seconds per GiB of guest memory, pause or abort (0: never). */
  completionTimeoutPerGiB: number;
  /**
   * At the completion timeout, switch to post-copy (with `driver.allowPostCopy`) or pause
   * the guest so the copy converges, instead of aborting.
   */
  allowWorkloadDisruption: boolean;
  /** libvirt's max downtime for the job, ms; absent: QEMU's default (300). */
  maxDowntimeMs?: number;
}

const HOST_RE = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/;

/** Validates the request; errors are INVALID_ARGUMENT naming the VMI and the field. */
export function parseMigrationRequest(
  raw: Uint8Array | undefined,
  vmi: VirtualMachineInstance,
  subject: string,
): MigrationPlan {
  const bad = (msg: string) => new LauncherRpcError(status.INVALID_ARGUMENT, `${subject}: ${msg}`);
  if (!raw?.length) throw bad('migration options: missing');
  let o: MigrationRequestOptions;
  try {
    o = JSON.parse(Buffer.from(raw).toString('utf8'));
  } catch (e) {
    throw bad(`migration options: not JSON: ${(e as Error).message}`);
  }
  if (!o || typeof o !== 'object' || Array.isArray(o)) throw bad('migration options: must be a JSON object');

  const state = vmi.status?.migrationState;
  const uid = state?.migrationUid ?? '';
  if (!uid)
    throw bad('status.migrationState.migrationUid: required to migrate (no migration is in progress)');

  let bandwidthMiBps = 0;
  if (o.Bandwidth !== undefined && o.Bandwidth !== null && o.Bandwidth !== '') {
    const q = parseQuantity(o.Bandwidth as string);
    if (!q || q.num < 0n)
      throw bad(`migration options.Bandwidth: ${JSON.stringify(o.Bandwidth)} is not a non-negative quantity`);
    bandwidthMiBps = Number(q.num / q.den / 1048576n);
  }
  const seconds = (v: unknown, field: string): number => {
    if (v === undefined || v === null) return 0;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
      throw bad(`migration options.${field}: must be a non-negative integer`);
    }
    return v;
  };
  const flag = (v: unknown, field: string): boolean => {
    if (v === undefined || v === null) return false;
    if (typeof v !== 'boolean') throw bad(`migration options.${field}: must be a boolean`);
    return v;
  };

  let targetUri = o.TargetURI ?? '';
  if (typeof targetUri !== 'string') throw bad('migration options.TargetURI: must be a string');
  if (!targetUri) {
    const addr = state?.targetNodeAddress;
    if (!addr) {
      throw bad(
        'status.migrationState.targetNodeAddress: required to reach the target (or give migration options.TargetURI)',
      );
    }
    if (!HOST_RE.test(addr)) {
      throw bad(
        `status.migrationState.targetNodeAddress: ${JSON.stringify(addr)} is not a host or host:port`,
      );
    }
    targetUri = `qemu+tcp://${addr}/system`;
  } else if (!/^[a-z][a-z0-9+.-]*:\/\/[^\s]*$/.test(targetUri)) {
    throw bad(`migration options.TargetURI: ${JSON.stringify(targetUri)} is not a libvirt URI`);
  }
  const migrateUri = o.MigrateURI ?? '';
  if (typeof migrateUri !== 'string' || (migrateUri && !/^(tcp|unix|rdma):\/\/[^\s]+$/.test(migrateUri))) {
    throw bad(
      `migration options.MigrateURI: ${JSON.stringify(migrateUri)} is not a tcp://, unix:// or rdma:// URI`,
    );
  }
  const disksUri = o.DisksURI ?? '';
  if (typeof disksUri !== 'string' || (disksUri && !/^(tcp|unix):\/\/[^\s]+$/.test(disksUri))) {
    throw bad(`migration options.DisksURI: ${JSON.stringify(disksUri)} is not a tcp:// or unix:// URI`);
  }
  // upstream: the local disks travel when the handler found the VMI block-migrating; here
  // through the migration proxy's disks socket (without the proxy, as before: not copied).
  const block = disksUri !== '';
  if (block && vmi.status?.migrationMethod !== 'BlockMigration') {
    throw bad(
      `migration options.DisksURI: given, but status.migrationMethod is ${JSON.stringify(vmi.status?.migrationMethod ?? '')}, not BlockMigration`,
    );
  }
  const allowPostCopy = flag(o.AllowPostCopy, 'AllowPostCopy');
  let parallel: number | undefined;
  if (o.ParallelMigrationThreads !== undefined && o.ParallelMigrationThreads !== null) {
    const n = o.ParallelMigrationThreads;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) {
      throw bad('migration options.ParallelMigrationThreads: must be a positive integer');
    }
    parallel = n;
  }
  let maxDowntimeMs: number | undefined;
  if (o.MaxDowntimeMs !== undefined && o.MaxDowntimeMs !== null) {
    const n = o.MaxDowntimeMs;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) {
      throw bad('migration options.MaxDowntimeMs: must be a positive integer (milliseconds)');
    }
    maxDowntimeMs = n;
  }
  const targetXml = o.TargetDomainXML ?? '';
  if (typeof targetXml !== 'string') throw bad('migration options.TargetDomainXML: must be a string');

  return {
    uid,
    targetUri,
    targetXml,
    driver: {
      bandwidthMiBps,
      allowAutoConverge: flag(o.AllowAutoConverge, 'AllowAutoConverge'),
      allowPostCopy,
      unsafe: flag(o.UnsafeMigration, 'UnsafeMigration'),
      ...(migrateUri ? { migrateUri } : {}),
      ...(block ? { blockMigration: blockMigrationVolumes(vmi) } : {}),
      ...(disksUri ? { disksUri } : {}),
      // As upstream: parallel connections only without post-copy (QEMU cannot combine them).
      ...(parallel !== undefined && !allowPostCopy ? { parallelConnections: parallel } : {}),
    },
    progressTimeoutSeconds: seconds(o.ProgressTimeout, 'ProgressTimeout'),
    completionTimeoutPerGiB: seconds(o.CompletionTimeoutPerGiB, 'CompletionTimeoutPerGiB'),
    allowWorkloadDisruption: flag(o.AllowWorkloadDisruption, 'AllowWorkloadDisruption'),
    ...(maxDowntimeMs !== undefined ? { maxDowntimeMs } : {}),
  };
}
