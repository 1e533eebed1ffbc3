/**
 * Which volume capabilities (access type and access mode) and which StorageClass
 * parameters the driver accepts.
 *
 * Access modes: the single-node ones always (RWO: SINGLE_NODE_WRITER, RWOP:
 * SINGLE_NODE_SINGLE_WRITER, and SINGLE_NODE_READER_ONLY, SINGLE_NODE_MULTI_WRITER);
 * the multi-node ones (RWX, ROX) only on a pool every node shares (the parameter
 * `shared: "true"`). Even there a filesystem volume is never written from two nodes: one
 * ext4 or XFS mounted twice corrupts, so multi-node writers need `volumeMode: Block`.
 */

import { SHARED_PARAMETER } from '../common/csi-objects';
import { invalid } from './errors';
import { VolumeCapability_AccessMode_Mode as Mode, type VolumeCapability } from './generated/csi/csi';

/** The StorageClass parameter that says every node sees the same pool. */
export { SHARED_PARAMETER };

/** Keys the CO's sidecars add (PVC name and namespace, ...): recorded, not interpreted. */
const CO_PREFIX = 'csi.storage.k8s.io/';
/** The filesystems NodeStage makes and mounts (an empty fs_type means ext4). */
export const FILESYSTEMS = ['ext4', 'xfs'];
const MOUNT_FLAG = /^[A-Za-z0-9_.:=-]{1,64}$/;

/** The parameters, checked: unknown keys are an error naming the key. */
export function checkParameters(field: string, params: Record<string, string>): { shared: boolean } {
  for (const [k, v] of Object.entries(params)) {
    if (k.startsWith(CO_PREFIX)) continue;
    if (k !== SHARED_PARAMETER)
      throw invalid(`${field}.${k}`, `unknown parameter (the driver knows only "${SHARED_PARAMETER}")`);
    if (v !== 'true' && v !== 'false')
      throw invalid(`${field}.${k}`, `${JSON.stringify(v)} is neither "true" nor "false"`);
  }
  return { shared: params[SHARED_PARAMETER] === 'true' };
}

/** Snapshot parameters: none are known yet. */
export function checkSnapshotParameters(field: string, params: Record<string, string>): void {
  for (const k of Object.keys(params))
    if (!k.startsWith(CO_PREFIX)) throw invalid(`${field}.${k}`, 'unknown parameter (snapshots take none)');
}

/** Whether the access mode only reads. */
export function isReadOnlyMode(mode: Mode | undefined): boolean {
  return mode === Mode.SINGLE_NODE_READER_ONLY || mode === Mode.MULTI_NODE_READER_ONLY;
}

/** Why the driver cannot serve `cap` (on a shared pool or not), or undefined when it can. */
export function capabilityProblem(cap: VolumeCapability | undefined, shared: boolean): string | undefined {
  if (!cap) return 'is required';
  if (!cap.block === !cap.mount) return 'needs exactly one access type, block or mount';
  const mode = cap.accessMode?.mode;
  if (mode === undefined || mode === Mode.UNKNOWN || mode === Mode.UNRECOGNIZED || !(mode in Mode))
    return 'access_mode.mode is required';
  const multiNode =
    mode === Mode.MULTI_NODE_READER_ONLY ||
    mode === Mode.MULTI_NODE_SINGLE_WRITER ||
    mode === Mode.MULTI_NODE_MULTI_WRITER;
  if (multiNode && !shared)
    return `access mode ${Mode[mode]} needs a pool shared by every node (StorageClass parameter ${SHARED_PARAMETER}: "true")`;
  if (multiNode && cap.mount && mode !== Mode.MULTI_NODE_READER_ONLY)
    return `access mode ${Mode[mode]} on a filesystem volume: one filesystem mounted on several nodes corrupts; use a block volume`;
  if (cap.mount) {
    if (cap.mount.fsType && !FILESYSTEMS.includes(cap.mount.fsType))
      return `mount.fs_type ${JSON.stringify(cap.mount.fsType)} is not one of ${FILESYSTEMS.join(', ')}`;
    const bad = cap.mount.mountFlags.find((f) => !MOUNT_FLAG.test(f));
    if (bad !== undefined) return `mount.mount_flags: ${JSON.stringify(bad)} is not a mount option`;
    if (cap.mount.volumeMountGroup) return 'mount.volume_mount_group is not supported';
  }
  return undefined;
}
