/**
 * The kubelet's CSI volume plugin for local mode's pod runtime, against the driver's Node
 * service in-process: a pod's claim bound to a PV of the driver is staged once per volume
 * (`<csi dir>/staging/<pv>`, the kubelet's globalmount) and published into the pod's
 * directory at `volumes/kubernetes.io~csi/<pv>/mount` (a block volume: the device node
 * bound on the file `.../<pv>/dev`, which the pod's volumeDevices path maps to), with the PV's volume handle kept
 * beside it in `vol_data.json` (as the kubelet does) so the pod's teardown can unpublish
 * it, and the volume is unstaged once no pod publishes it.
 */
import { chmod, chown, lstat, mkdir, readdir, readFile, rm, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { mountAt, readMounts } from '../../csi-driver/mounts';
import { NodeState } from '../../csi-driver/node-state';
import type { CsiVolumeSource } from '../../local/pod-runtime/pod-runtime-options';
import { volumeCapability } from './capability';
import type { LocalCsi } from './local-csi';

/** The kubelet's plugin directory name of CSI volumes in a pod. */
const CSI_PLUGIN_DIR = 'kubernetes.io~csi';

interface VolData {
  volumeHandle: string;
  stagingPath: string;
  targetPath?: string;
}

function stagingPath(csi: LocalCsi, pvName: string): string {
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(pvName))
    throw new Error(`PersistentVolume name ${JSON.stringify(pvName)} is not a DNS-1123 subdomain`);
  return join(csi.stagingDir, pvName, 'globalmount');
}

/** Stages (once) and publishes `v` into the pod directory; returns the published directory. */
export async function publishVolume(csi: LocalCsi, podDir: string, v: CsiVolumeSource): Promise<string> {
  const { node } = await csi.ready();
  const staging = stagingPath(csi, v.pvName);
  const cap = volumeCapability(v.accessMode, v.volumeMode, v.fsType);
  const base = { volumeId: v.volumeHandle, publishContext: {}, secrets: {}, volumeContext: {} };
  await mkdir(staging, { recursive: true, mode: 0o750 });
  await node.nodeStageVolume({ ...base, stagingTargetPath: staging, volumeCapability: cap });
  const dir = join(podDir, 'volumes', CSI_PLUGIN_DIR, v.pvName);
  // A filesystem volume is a directory, a block volume a file the device node is bound on.
  const block = v.volumeMode === 'Block';
  const target = join(dir, block ? 'dev' : 'mount');
  // Traversable: QEMU (its own account) reaches the disk through this path, there being no mount namespace.
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const data: VolData = { volumeHandle: v.volumeHandle, stagingPath: staging, targetPath: target };
  await writeFile(join(dir, 'vol_data.json'), `${JSON.stringify(data)}\n`, { mode: 0o600 });
  await node.nodePublishVolume({
    ...base,
    stagingTargetPath: staging,
    targetPath: target,
    volumeCapability: cap,
    readonly: v.readOnly,
  });
  if (v.fsGroup !== undefined && !v.readOnly && !block) await giveToGroup(target, v.fsGroup);
  return target;
}

/**
 * The kubelet's SetVolumeOwnership (fsGroupPolicy File): every file of the volume gets the
 * group and group read-write (directories also the setgid bit, so new files inherit it).
 */
async function giveToGroup(root: string, gid: number): Promise<void> {
  const walk = async (path: string): Promise<void> => {
    const st = await lstat(path);
    if (st.isSymbolicLink()) return;
    if (st.gid !== gid) await chown(path, st.uid, gid);
    const want = st.isDirectory() ? st.mode | 0o2070 : st.mode | 0o060;
    if ((st.mode & 0o7777) !== (want & 0o7777)) await chmod(path, want & 0o7777);
    if (st.isDirectory()) for (const e of await readdir(path)) await walk(join(path, e));
  };
  await walk(root);
}

/** Unstages `pvName`'s volume when nothing on this node publishes it any more. */
export async function unstageIfUnused(csi: LocalCsi, pvName: string, volumeHandle: string): Promise<void> {
  const { node, pool } = await csi.ready();
  const state = await new NodeState(join(pool.dir, 'nodes', csi.nodeId)).get(volumeHandle);
  if (state.publications.length > 0 || !state.stagingPath) return;
  await node.nodeUnstageVolume({ volumeId: volumeHandle, stagingTargetPath: state.stagingPath });
  // Never recursive: an empty directory is all an unmounted staging path leaves.
  await rmdir(join(csi.stagingDir, pvName, 'globalmount')).catch(() => undefined);
  await rmdir(join(csi.stagingDir, pvName)).catch(() => undefined);
}

/**
 * Unpublishes every CSI volume of a pod directory (and unstages those left unused); throws
 * while anything is still mounted below the pod directory, so the caller never removes
 * a directory holding a volume's contents.
 */
export async function unpublishPodVolumes(csi: LocalCsi, podDir: string): Promise<void> {
  const root = join(podDir, 'volumes', CSI_PLUGIN_DIR);
  const names = await readdir(root).catch(() => [] as string[]);
  const node = names.length ? (await csi.ready()).node : undefined;
  for (const pvName of names) {
    const dir = join(root, pvName);
    const data = JSON.parse(await readFile(join(dir, 'vol_data.json'), 'utf8')) as VolData;
    const target = data.targetPath ?? join(dir, 'mount');
    await node?.nodeUnpublishVolume({ volumeId: data.volumeHandle, targetPath: target });
    await unstageIfUnused(csi, pvName, data.volumeHandle);
    if (await mountAt(target)) throw new Error(`${target} is still mounted`);
    await rm(join(dir, 'vol_data.json'), { force: true });
  }
  const prefix = `${podDir}/`;
  const left = (await readMounts()).filter((m) => m.mountPoint?.startsWith(prefix));
  if (left.length)
    throw new Error(`${podDir}: still has mounts: ${left.map((m) => m.mountPoint).join(', ')}`);
}
