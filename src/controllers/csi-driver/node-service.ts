/**
 * The CSI Node service. NodeStageVolume binds the volume's pool file to a loop device
 * (one read-write device per volume, found again by asking the kernel) and, for a
 * filesystem volume, makes the filesystem when the file holds none and mounts it on the
 * staging path; NodePublishVolume bind-mounts the staging mount (filesystem) or the loop
 * device (block: on a file at the target path; a read-only publication gets its own
 * read-only loop device, since a bind mount's `ro` does not stop writes to a device node).
 */
import { mkdir, open, rmdir, stat, statfs, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import { status } from '@grpc/grpc-js';
import { runTool } from '../common/run-tool';
import { capabilityProblem, isReadOnlyMode } from './access-modes';
import { CsiError, invalid, notFound, precondition } from './errors';
import { growExt4Offline, growMounted } from './filesystem-grow';
import {
  VolumeCapability_AccessMode_Mode as Mode,
  type NodeExpandVolumeRequest,
  type NodeExpandVolumeResponse,
  type NodeGetCapabilitiesResponse,
  type NodeGetInfoResponse,
  type NodeGetVolumeStatsRequest,
  type NodeGetVolumeStatsResponse,
  type NodePublishVolumeRequest,
  type NodeStageVolumeRequest,
  type NodeUnpublishVolumeRequest,
  type NodeUnstageVolumeRequest,
  NodeServiceCapability_RPC_Type as Rpc,
  VolumeUsage_Unit,
} from './generated/csi/csi';
import { checkHostPath, checkIdField } from './ids';
import { attachLoop, detachLoop, loopDevicesOf, refreshLoopSize } from './loop-devices';
import { bindMount, filesystemOf, mount, mountAt, readMounts, unmount } from './mounts';
import { NodeState, type VolumeNodeState } from './node-state';
import type { Pool, VolumeRecord } from './pool';
import { TOPOLOGY_KEY } from './topology';

const CAPABILITIES = [
  Rpc.STAGE_UNSTAGE_VOLUME,
  Rpc.GET_VOLUME_STATS,
  Rpc.EXPAND_VOLUME,
  Rpc.VOLUME_CONDITION,
  Rpc.SINGLE_NODE_MULTI_WRITER,
];

/** Options of {@link NodeService}. */
export interface NodeServiceOptions {
  pool: Pool;
  nodeId: string;
}

async function kindOf(path: string): Promise<'dir' | 'file' | undefined> {
  try {
    return (await stat(path)).isDirectory() ? 'dir' : 'file';
  } catch {
    return undefined;
  }
}

/** The Node service's RPCs as promise-returning methods (grpc-server.ts serves them). */
export class NodeService {
  private readonly state: NodeState;

  constructor(private readonly o: NodeServiceOptions) {
    this.state = new NodeState(`${o.pool.dir}/nodes/${o.nodeId}`);
  }

  private async volume(id: string): Promise<VolumeRecord> {
    const vol = await this.o.pool.getVolume(id);
    if (!vol) throw notFound(`volume ${JSON.stringify(id)} does not exist`);
    return vol;
  }

  /** The volume's read-write loop device, if bound. */
  private async rwDevice(id: string): Promise<string | undefined> {
    // One being detached (held open elsewhere) is not reused: it goes at its last close.
    return (await loopDevicesOf(this.o.pool.diskPath(id))).find((d) => !d.readOnly && !d.autoclear)?.name;
  }

  async nodeGetCapabilities(): Promise<NodeGetCapabilitiesResponse> {
    return { capabilities: CAPABILITIES.map((type) => ({ rpc: { type } })) };
  }

  async nodeGetInfo(): Promise<NodeGetInfoResponse> {
    return {
      nodeId: this.o.nodeId,
      maxVolumesPerNode: 0,
      accessibleTopology: { segments: { [TOPOLOGY_KEY]: this.o.nodeId } },
    };
  }

  async nodeStageVolume(req: NodeStageVolumeRequest): Promise<Record<string, never>> {
    const id = checkIdField('volume_id', req.volumeId);
    const staging = checkHostPath('staging_target_path', req.stagingTargetPath, this.o.pool.dir);
    if (!req.volumeCapability) throw invalid('volume_capability', 'is required');
    return this.o.pool.locks.run(id, async () => {
      const vol = await this.volume(id);
      const problem = capabilityProblem(req.volumeCapability, vol.parameters.shared === 'true');
      if (problem) throw invalid('volume_capability', problem);
      const s = await this.state.get(id);
      if (s.stagingPath && s.stagingPath !== staging)
        throw precondition(`volume ${id} is staged at ${s.stagingPath} already`);
      const block = !!req.volumeCapability?.block;
      let device = await this.rwDevice(id);
      const attachedHere = !device;
      device ??= await attachLoop(this.o.pool.diskPath(id));
      try {
        if (!block) await this.mountFilesystem(device, staging, req.volumeCapability?.mount);
      } catch (err) {
        if (attachedHere) await detachLoop(device, this.o.pool.diskPath(id)).catch(() => {});
        throw err;
      }
      await this.state.put(id, { ...s, stagingPath: staging, block });
      return {};
    });
  }

  /** Makes the filesystem when the device holds none, and mounts it at `staging` (idempotent). */
  private async mountFilesystem(
    device: string,
    staging: string,
    m: { fsType: string; mountFlags: string[] } | undefined,
  ): Promise<void> {
    await mkdir(staging, { recursive: true });
    const current = await mountAt(staging);
    if (current) {
      if (current.source === device) return;
      throw new CsiError(
        status.ALREADY_EXISTS,
        `staging_target_path: ${staging} has ${current.source} mounted`,
      );
    }
    let fs = await filesystemOf(device);
    if (!fs) {
      fs = m?.fsType || 'ext4';
      // ext4 without root-reserved blocks and with one inode per 64 KiB: a volume holds a
      // VM's disk.img, which KubeVirt sizes to the claim within 10 % (its
      // pvcTolerateLessSpaceUpToPercent); the defaults' 5 % reserve and inode tables (on a
      // small volume one inode per 4 KiB) left less than that free.
      await runTool(
        `mkfs.${fs}`,
        fs === 'ext4' ? ['-q', '-F', '-m', '0', '-i', '65536', device] : ['-q', device],
      );
    } else if (m?.fsType && m.fsType !== fs) {
      throw precondition(`volume_capability.mount.fs_type: the volume holds ${fs}, not ${m.fsType}`);
    } else if (fs === 'ext4' && !(await this.inUse(device))) {
      // An expansion made while the volume was not staged: grown before mounting.
      await growExt4Offline(device);
    }
    await mount(device, staging, { type: fs, options: m?.mountFlags });
    if (fs === 'xfs') await growMounted(fs, staging, device);
  }

  async nodeUnstageVolume(req: NodeUnstageVolumeRequest): Promise<Record<string, never>> {
    const id = checkIdField('volume_id', req.volumeId);
    const staging = checkHostPath('staging_target_path', req.stagingTargetPath, this.o.pool.dir);
    return this.o.pool.locks.run(id, async () => {
      await this.volume(id);
      const s = await this.state.get(id);
      const device = await this.rwDevice(id);
      const current = await mountAt(staging);
      if (current && device && current.source === device) await unmount(staging);
      if (device && s.publications.length === 0 && !(await this.inUse(device)))
        await detachLoop(device, this.o.pool.diskPath(id));
      await this.state.put(id, { ...s, stagingPath: undefined });
      return {};
    });
  }

  /** Whether a mount still uses the device (a filesystem on it, or a bind of its node). */
  private async inUse(device: string): Promise<boolean> {
    const node = `/${device.split('/').pop()}`;
    return (await readMounts()).some(
      (m) => m.source === device || (m.fsType === 'devtmpfs' && m.root === node),
    );
  }

  async nodePublishVolume(req: NodePublishVolumeRequest): Promise<Record<string, never>> {
    const id = checkIdField('volume_id', req.volumeId);
    const target = checkHostPath('target_path', req.targetPath, this.o.pool.dir);
    const staging = checkHostPath('staging_target_path', req.stagingTargetPath, this.o.pool.dir);
    const cap = req.volumeCapability;
    if (!cap) throw invalid('volume_capability', 'is required');
    return this.o.pool.locks.run(id, async () => {
      const vol = await this.volume(id);
      const problem = capabilityProblem(cap, vol.parameters.shared === 'true');
      if (problem) throw invalid('volume_capability', problem);
      const mode = cap.accessMode?.mode ?? Mode.UNKNOWN;
      const readOnly = req.readonly || isReadOnlyMode(mode);
      const block = !!cap.block;
      const s = await this.state.get(id);
      const same = s.publications.find((p) => p.targetPath === target);
      if (same) {
        if (same.readOnly === readOnly && same.block === block && same.mode === mode) return {};
        throw new CsiError(
          status.ALREADY_EXISTS,
          `target_path: ${target} holds this volume with another capability`,
        );
      }
      this.checkSingleWriter(s, mode, readOnly, id);
      if (s.stagingPath !== staging) throw precondition(`volume ${id} is not staged at ${staging}`);
      const device = await this.rwDevice(id);
      if (!device) throw precondition(`volume ${id} is not staged (no loop device)`);
      let roDevice: string | undefined;
      if (block) {
        await mkdir(dirname(target), { recursive: true });
        await (await open(target, 'a')).close();
        roDevice = readOnly ? await attachLoop(this.o.pool.diskPath(id), true) : undefined;
        try {
          await bindMount(roDevice ?? device, target, false);
        } catch (err) {
          if (roDevice) await detachLoop(roDevice, this.o.pool.diskPath(id)).catch(() => {});
          throw err;
        }
      } else {
        const staged = await mountAt(staging);
        if (staged?.source !== device) throw precondition(`volume ${id} is not mounted at ${staging}`);
        await mkdir(target, { recursive: true });
        await bindMount(staging, target, readOnly);
      }
      s.publications.push({ targetPath: target, readOnly, block, mode, roDevice });
      await this.state.put(id, s);
      return {};
    });
  }

  /** RWOP: a SINGLE_NODE_SINGLE_WRITER volume is published read-write at one target path at most. */
  private checkSingleWriter(s: VolumeNodeState, mode: Mode, readOnly: boolean, id: string): void {
    if (readOnly) return;
    const writers = s.publications.filter((p) => !p.readOnly);
    const single =
      mode === Mode.SINGLE_NODE_SINGLE_WRITER ||
      writers.some((p) => p.mode === Mode.SINGLE_NODE_SINGLE_WRITER);
    if (single && writers.length > 0)
      throw precondition(
        `volume ${id} is SINGLE_NODE_SINGLE_WRITER and published read-write at ${writers[0].targetPath} already`,
      );
  }

  async nodeUnpublishVolume(req: NodeUnpublishVolumeRequest): Promise<Record<string, never>> {
    const id = checkIdField('volume_id', req.volumeId);
    const target = checkHostPath('target_path', req.targetPath, this.o.pool.dir);
    return this.o.pool.locks.run(id, async () => {
      await this.volume(id);
      const s = await this.state.get(id);
      const pub = s.publications.find((p) => p.targetPath === target);
      if (await mountAt(target)) await unmount(target);
      // Never a recursive removal: if the unmount had not happened, the pod's data would be below.
      const kind = await kindOf(target);
      if (kind === 'dir') await rmdir(target);
      else if (kind === 'file' && (await stat(target)).size === 0) await unlink(target);
      // A failed detach fails the call with the publication still recorded: the retry detaches again.
      if (pub?.roDevice) await detachLoop(pub.roDevice, this.o.pool.diskPath(id));
      s.publications = s.publications.filter((p) => p !== pub);
      await this.state.put(id, s);
      return {};
    });
  }

  /** A volume_path to look at: one that cannot be a publication of ours (relative, `..`, in the pool) is not found. */
  private volumePath(path: string): string {
    try {
      return checkHostPath('volume_path', path, this.o.pool.dir);
    } catch (err) {
      throw notFound((err as Error).message);
    }
  }

  async nodeGetVolumeStats(req: NodeGetVolumeStatsRequest): Promise<NodeGetVolumeStatsResponse> {
    const id = checkIdField('volume_id', req.volumeId);
    if (!req.volumePath) throw invalid('volume_path', 'is required');
    const vol = await this.volume(id);
    const path = this.volumePath(req.volumePath);
    const kind = await kindOf(path);
    if (!kind) throw notFound(`volume_path: ${path} does not exist`);
    const mounted = !!(await mountAt(path));
    const volumeCondition = mounted
      ? { abnormal: false, message: `mounted at ${path}` }
      : { abnormal: true, message: `${path} is not a mount of the volume` };
    if (kind === 'file')
      return {
        usage: [{ total: vol.capacityBytes, available: 0, used: 0, unit: VolumeUsage_Unit.BYTES }],
        volumeCondition,
      };
    const fs = await statfs(path);
    return {
      usage: [
        {
          total: fs.blocks * fs.bsize,
          available: fs.bavail * fs.bsize,
          used: (fs.blocks - fs.bfree) * fs.bsize,
          unit: VolumeUsage_Unit.BYTES,
        },
        { total: fs.files, available: fs.ffree, used: fs.files - fs.ffree, unit: VolumeUsage_Unit.INODES },
      ],
      volumeCondition,
    };
  }

  async nodeExpandVolume(req: NodeExpandVolumeRequest): Promise<NodeExpandVolumeResponse> {
    const id = checkIdField('volume_id', req.volumeId);
    if (!req.volumePath) throw invalid('volume_path', 'is required');
    return this.o.pool.locks.run(id, async () => {
      const vol = await this.volume(id);
      const path = this.volumePath(req.volumePath);
      const kind = await kindOf(path);
      if (!kind) throw notFound(`volume_path: ${path} does not exist`);
      // Every loop device of the file (read-write and read-only) takes the new size: online for block.
      for (const d of await loopDevicesOf(this.o.pool.diskPath(id))) await refreshLoopSize(d.name);
      if (kind === 'dir' && !req.volumeCapability?.block) {
        const m = await mountAt(path);
        const device = await this.rwDevice(id);
        if (!m || !device) throw precondition(`volume_path: ${path} is not a mount of volume ${id}`);
        await growMounted(m.fsType, path, device);
      }
      return { capacityBytes: vol.capacityBytes };
    });
  }
}
