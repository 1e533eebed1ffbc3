/**
 * The pod volumes backed by host paths: hostPath volumes checked or created by their
 * type, and PVCs resolved through their bound PersistentVolume to a hostPath or local
 * directory (filesystem mode only), or published by the runtime's CSI plugin (CSI PVs).
 */
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { NotFoundError } from '../../runtime/errors';
import { PersistentVolumeClaimType, PersistentVolumeType } from '../../runtime/resources';
import type { KubeObject, ObjectClient } from '../../runtime/types';
import type { PodCsiVolumes } from './pod-runtime-options';
import type { MaterializedVolume } from './pod-volumes';
import { hostPathProblem, quoted } from './volume-paths';

/** Checks (or for the *OrCreate types, creates) a hostPath volume's path by its `type`, as kubelet does. */
export async function checkHostPath(path: string, type: string | undefined, field: string): Promise<void> {
  const st = await stat(path).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT') return undefined;
    throw e;
  });
  switch (type ?? '') {
    case '':
      return;
    case 'DirectoryOrCreate':
      if (!st) await mkdir(path, { recursive: true, mode: 0o755 });
      else if (!st.isDirectory()) throw new Error(`${field}: ${quoted(path)} exists and is not a directory`);
      return;
    case 'Directory':
      if (!st?.isDirectory()) throw new Error(`${field}: ${quoted(path)} is not an existing directory`);
      return;
    case 'FileOrCreate':
      if (!st) {
        await mkdir(dirname(path), { recursive: true, mode: 0o755 });
        await writeFile(path, '', { mode: 0o644, flag: 'wx' });
      } else if (!st.isFile()) throw new Error(`${field}: ${quoted(path)} exists and is not a file`);
      return;
    case 'File':
      if (!st?.isFile()) throw new Error(`${field}: ${quoted(path)} is not an existing file`);
      return;
    case 'BlockDevice':
      if (!st?.isBlockDevice()) throw new Error(`${field}: ${quoted(path)} is not a block device`);
      return;
    default:
      throw new Error(`${field}.type: ${quoted(type ?? '')} is not a hostPath type this runtime supports`);
  }
}

interface ClaimObject extends KubeObject {
  spec?: { volumeName?: string; volumeMode?: string };
  status?: { phase?: string };
}
interface PVObject extends KubeObject {
  spec?: {
    hostPath?: { path: string; type?: string };
    local?: { path: string };
    csi?: { driver: string; volumeHandle: string; fsType?: string; readOnly?: boolean };
    accessModes?: string[];
    volumeMode?: string;
  };
}

/** Where a claim's CSI volume is published: the runtime's CSI plugin and the pod's directory. */
export interface ClaimPublishing {
  csi?: PodCsiVolumes;
  podDir: string;
  readOnly?: boolean;
  fsGroup?: number;
}

/** Resolves a PVC to its bound PV's host path (hostPath or local PVs only). */
export async function claimPath(
  client: ObjectClient,
  namespace: string,
  claimName: string,
  field: string,
  publishing?: ClaimPublishing,
): Promise<MaterializedVolume> {
  const pvcKey = quoted(`${namespace}/${claimName}`);
  let pvc: ClaimObject;
  try {
    pvc = await client.get<ClaimObject>(PersistentVolumeClaimType, claimName, namespace);
  } catch (e) {
    if (e instanceof NotFoundError) throw new Error(`${field}: PersistentVolumeClaim ${pvcKey} not found`);
    throw e;
  }
  const pvName = pvc.spec?.volumeName;
  if (pvc.status?.phase !== 'Bound' || !pvName)
    throw new Error(
      `${field}: PersistentVolumeClaim ${pvcKey} is not bound (phase ${pvc.status?.phase ?? 'unknown'})`,
    );
  let pv: PVObject;
  try {
    pv = await client.get<PVObject>(PersistentVolumeType, pvName);
  } catch (e) {
    if (e instanceof NotFoundError)
      throw new Error(`${field}: PersistentVolume ${quoted(pvName)} bound to ${pvcKey} not found`);
    throw e;
  }
  const csi = pv.spec?.csi;
  if (csi) {
    if (!publishing?.csi)
      throw new Error(
        `${field}: PersistentVolume ${quoted(pvName)} bound to ${pvcKey} is a CSI volume (driver ${quoted(csi.driver)}) and this runtime has no CSI driver`,
      );
    const hostPath = await publishing.csi.publish(publishing.podDir, {
      pvName,
      volumeHandle: csi.volumeHandle,
      driver: csi.driver,
      fsType: csi.fsType,
      accessMode: pv.spec?.accessModes?.[0],
      volumeMode: pv.spec?.volumeMode ?? pvc.spec?.volumeMode,
      readOnly: !!(publishing.readOnly || csi.readOnly),
      fsGroup: publishing.fsGroup,
    });
    return { hostPath };
  }
  const src = pv.spec?.hostPath ?? pv.spec?.local;
  if (!src)
    throw new Error(
      `${field}: PersistentVolume ${quoted(pvName)} bound to ${pvcKey} is neither hostPath, local nor CSI; this runtime mounts no other kind`,
    );
  const problem = hostPathProblem(src.path);
  if (problem)
    throw new Error(`PersistentVolume ${quoted(pvName)}: spec path ${quoted(src.path)} ${problem}`);
  if ((pv.spec?.volumeMode ?? pvc.spec?.volumeMode) === 'Block')
    throw new Error(
      `${field}: PersistentVolumeClaim ${pvcKey} is in Block mode; this runtime mounts filesystem claims only`,
    );
  const st = await stat(src.path).catch(() => undefined);
  if (!st?.isDirectory())
    throw new Error(
      `${field}: PersistentVolume ${quoted(pvName)}: ${quoted(src.path)} is not a directory on this node`,
    );
  return { hostPath: src.path };
}
