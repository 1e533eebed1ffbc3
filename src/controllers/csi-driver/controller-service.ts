/**
 * The CSI Controller service: volumes and snapshots in the node's pool (pool.ts). It runs
 * on the node that holds the pool (topology `topology.kubevirt-ts.io/node`), beside the
 * node service. Every ID and name is checked at the boundary (ids.ts); errors carry the
 * status codes the CSI spec prescribes.
 */
import { status } from '@grpc/grpc-js';
import { capabilityProblem, checkParameters, checkSnapshotParameters } from './access-modes';
import { fits, sizeFor } from './capacity';
import { CsiError, invalid, notFound } from './errors';
import { withFrozenFilesystem } from './freeze';
import {
  type ControllerExpandVolumeRequest,
  type ControllerExpandVolumeResponse,
  type ControllerGetCapabilitiesResponse,
  type ControllerGetVolumeRequest,
  type ControllerGetVolumeResponse,
  type CreateSnapshotRequest,
  type CreateSnapshotResponse,
  type CreateVolumeRequest,
  type CreateVolumeResponse,
  type DeleteSnapshotRequest,
  type DeleteVolumeRequest,
  type GetCapacityRequest,
  type GetCapacityResponse,
  type GetSnapshotRequest,
  type GetSnapshotResponse,
  type ListSnapshotsRequest,
  type ListSnapshotsResponse,
  type ListVolumesRequest,
  type ListVolumesResponse,
  ControllerServiceCapability_RPC_Type as Rpc,
  type Snapshot,
  type Topology,
  type ValidateVolumeCapabilitiesRequest,
  type ValidateVolumeCapabilitiesResponse,
  type Volume,
} from './generated/csi/csi';
import { checkIdField, checkName, snapshotIdFor, volumeIdFor } from './ids';
import { loopDevicesOf } from './loop-devices';
import { type Pool, PoolError, type SnapshotRecord, type VolumeRecord } from './pool';
import { TOPOLOGY_KEY } from './topology';

const CAPABILITIES = [
  Rpc.CREATE_DELETE_VOLUME,
  Rpc.LIST_VOLUMES,
  Rpc.GET_CAPACITY,
  Rpc.CREATE_DELETE_SNAPSHOT,
  Rpc.LIST_SNAPSHOTS,
  Rpc.GET_SNAPSHOT,
  Rpc.CLONE_VOLUME,
  Rpc.EXPAND_VOLUME,
  Rpc.GET_VOLUME,
  Rpc.VOLUME_CONDITION,
  Rpc.SINGLE_NODE_MULTI_WRITER,
];

/** PoolError to the CSI status the spec gives each case. */
function poolStatus(err: unknown): unknown {
  if (!(err instanceof PoolError)) return err;
  const code = {
    'not-found': status.NOT_FOUND,
    'no-space': status.RESOURCE_EXHAUSTED,
    'too-small': status.OUT_OF_RANGE,
    'in-use': status.FAILED_PRECONDITION,
  }[err.reason];
  return new CsiError(code, err.message);
}

/** A page of `items` from a starting token (the index as decimal; ABORTED when it is not one). */
function page<T>(items: T[], maxEntries: number, token: string): { items: T[]; nextToken: string } {
  if (maxEntries < 0) throw invalid('max_entries', 'is negative');
  const start = token === '' ? 0 : /^\d{1,9}$/.test(token) ? Number(token) : -1;
  if (start < 0 || start > items.length)
    throw new CsiError(
      status.ABORTED,
      `starting_token ${JSON.stringify(token)} is not a token this driver gave`,
    );
  const end = maxEntries ? Math.min(items.length, start + maxEntries) : items.length;
  return { items: items.slice(start, end), nextToken: end < items.length ? String(end) : '' };
}

/** Options of {@link ControllerService}. */
export interface ControllerServiceOptions {
  pool: Pool;
  /** This node's ID: the topology volumes are accessible from. */
  nodeId: string;
}

/** The Controller service's RPCs as promise-returning methods (grpc-server.ts serves them). */
export class ControllerService {
  constructor(private readonly o: ControllerServiceOptions) {}

  private topology(shared: boolean): Topology[] {
    // A shared pool is the same on every node: no constraint.
    return shared ? [] : [{ segments: { [TOPOLOGY_KEY]: this.o.nodeId } }];
  }

  private volume(r: VolumeRecord): Volume {
    const shared = r.parameters.shared === 'true';
    return {
      volumeId: r.id,
      capacityBytes: r.capacityBytes,
      volumeContext: {},
      contentSource: r.source?.snapshotId
        ? { snapshot: { snapshotId: r.source.snapshotId } }
        : r.source?.volumeId
          ? { volume: { volumeId: r.source.volumeId } }
          : undefined,
      accessibleTopology: this.topology(shared),
    };
  }

  private snapshot(s: SnapshotRecord): Snapshot {
    return {
      snapshotId: s.id,
      sourceVolumeId: s.sourceVolumeId,
      sizeBytes: s.sizeBytes,
      creationTime: new Date(s.createdAt),
      readyToUse: true,
      groupSnapshotId: '',
    };
  }

  async controllerGetCapabilities(): Promise<ControllerGetCapabilitiesResponse> {
    return { capabilities: CAPABILITIES.map((type) => ({ rpc: { type } })) };
  }

  async createVolume(req: CreateVolumeRequest): Promise<CreateVolumeResponse> {
    const name = checkName('name', req.name);
    if (req.volumeCapabilities.length === 0) throw invalid('volume_capabilities', 'is required');
    const { shared } = checkParameters('parameters', req.parameters);
    req.volumeCapabilities.forEach((cap, i) => {
      const problem = capabilityProblem(cap, shared);
      if (problem) throw invalid(`volume_capabilities[${i}]`, problem);
    });
    const requisite = req.accessibilityRequirements?.requisite ?? [];
    if (!shared && requisite.length && !requisite.some((t) => t.segments[TOPOLOGY_KEY] === this.o.nodeId))
      throw new CsiError(
        status.RESOURCE_EXHAUSTED,
        `accessibility_requirements.requisite: this driver's pool is on node ${this.o.nodeId}, which is not among them`,
      );
    const snapshotId = req.volumeContentSource?.snapshot?.snapshotId;
    const sourceVolumeId = req.volumeContentSource?.volume?.volumeId;
    if (req.volumeContentSource && !snapshotId && !sourceVolumeId)
      throw invalid('volume_content_source', 'names neither a snapshot nor a volume');
    const source = snapshotId ? { snapshotId } : sourceVolumeId ? { volumeId: sourceVolumeId } : undefined;
    const id = volumeIdFor(name);
    return this.o.pool.locks.run(id, async () => {
      const existing = await this.o.pool.getVolume(id);
      if (existing) {
        const same =
          fits(existing.capacityBytes, req.capacityRange) &&
          existing.source?.snapshotId === source?.snapshotId &&
          existing.source?.volumeId === source?.volumeId &&
          JSON.stringify(existing.parameters) === JSON.stringify(req.parameters);
        if (!same)
          throw new CsiError(
            status.ALREADY_EXISTS,
            `name: a volume named ${JSON.stringify(name)} exists (${existing.id}) with another size, source or parameters`,
          );
        return { volume: this.volume(existing) };
      }
      let atLeast = 0;
      if (snapshotId) {
        const snap = await this.o.pool.getSnapshot(snapshotId);
        if (!snap)
          throw notFound(
            `volume_content_source.snapshot.snapshot_id: ${JSON.stringify(snapshotId)} does not exist`,
          );
        atLeast = snap.sizeBytes;
      } else if (sourceVolumeId) {
        const vol = await this.o.pool.getVolume(sourceVolumeId);
        if (!vol)
          throw notFound(
            `volume_content_source.volume.volume_id: ${JSON.stringify(sourceVolumeId)} does not exist`,
          );
        atLeast = vol.capacityBytes;
      }
      const capacityBytes = sizeFor('capacity_range', req.capacityRange, atLeast);
      const rec = await this.o.pool
        .createVolume(id, { name, capacityBytes, parameters: { ...req.parameters }, source })
        .catch((e) => Promise.reject(poolStatus(e)));
      return { volume: this.volume(rec) };
    });
  }

  async deleteVolume(req: DeleteVolumeRequest): Promise<Record<string, never>> {
    const id = checkIdField('volume_id', req.volumeId);
    await this.o.pool.locks.run(id, () =>
      this.o.pool
        .deleteVolume(id, async (disk) => (await loopDevicesOf(disk)).length > 0)
        .catch((e) => Promise.reject(poolStatus(e))),
    );
    return {};
  }

  async validateVolumeCapabilities(
    req: ValidateVolumeCapabilitiesRequest,
  ): Promise<ValidateVolumeCapabilitiesResponse> {
    const id = checkIdField('volume_id', req.volumeId);
    if (req.volumeCapabilities.length === 0) throw invalid('volume_capabilities', 'is required');
    const vol = await this.o.pool.getVolume(id);
    if (!vol) throw notFound(`volume ${JSON.stringify(id)} does not exist`);
    const shared = vol.parameters.shared === 'true';
    for (const [i, cap] of req.volumeCapabilities.entries()) {
      const problem = capabilityProblem(cap, shared);
      if (problem) return { message: `volume_capabilities[${i}] ${problem}` };
    }
    return {
      confirmed: {
        volumeContext: req.volumeContext,
        volumeCapabilities: req.volumeCapabilities,
        parameters: req.parameters,
        mutableParameters: req.mutableParameters,
      },
      message: '',
    };
  }

  async listVolumes(req: ListVolumesRequest): Promise<ListVolumesResponse> {
    const p = page(await this.o.pool.listVolumes(), req.maxEntries, req.startingToken);
    return { entries: p.items.map((v) => ({ volume: this.volume(v) })), nextToken: p.nextToken };
  }

  async controllerGetVolume(req: ControllerGetVolumeRequest): Promise<ControllerGetVolumeResponse> {
    const id = checkIdField('volume_id', req.volumeId);
    const vol = await this.o.pool.getVolume(id);
    if (!vol) throw notFound(`volume ${JSON.stringify(id)} does not exist`);
    const staged = (await loopDevicesOf(this.o.pool.diskPath(id))).length > 0;
    return {
      volume: this.volume(vol),
      status: {
        publishedNodeIds: [],
        volumeCondition: {
          abnormal: false,
          message: `its file is in the pool${staged ? `, bound to a loop device on ${this.o.nodeId}` : ''}`,
        },
      },
    };
  }

  async getCapacity(req: GetCapacityRequest): Promise<GetCapacityResponse> {
    const { shared } = checkParameters('parameters', req.parameters);
    const elsewhere =
      !shared &&
      req.accessibleTopology &&
      Object.keys(req.accessibleTopology.segments).length > 0 &&
      req.accessibleTopology.segments[TOPOLOGY_KEY] !== this.o.nodeId;
    const unsupported = req.volumeCapabilities.some((c) => capabilityProblem(c, shared));
    if (elsewhere || unsupported) return { availableCapacity: 0 };
    const { availableBytes } = await this.o.pool.space();
    return {
      availableCapacity: availableBytes,
      maximumVolumeSize: availableBytes,
      minimumVolumeSize: 1024 * 1024,
    };
  }

  async controllerExpandVolume(req: ControllerExpandVolumeRequest): Promise<ControllerExpandVolumeResponse> {
    const id = checkIdField('volume_id', req.volumeId);
    if (!req.capacityRange) throw invalid('capacity_range', 'is required');
    const size = sizeFor('capacity_range', req.capacityRange);
    return this.o.pool.locks.run(id, async () => {
      const vol = await this.o.pool.getVolume(id);
      if (!vol) throw notFound(`volume ${JSON.stringify(id)} does not exist`);
      if (req.volumeCapability) {
        const problem = capabilityProblem(req.volumeCapability, vol.parameters.shared === 'true');
        if (problem) throw invalid('volume_capability', problem);
      }
      const capacityBytes = await this.o.pool
        .expandVolume(id, size)
        .catch((e) => Promise.reject(poolStatus(e)));
      // A bound loop device must learn the new size, and a filesystem must grow: the node does both.
      const attached = (await loopDevicesOf(this.o.pool.diskPath(id))).length > 0;
      return { capacityBytes, nodeExpansionRequired: !req.volumeCapability?.block || attached };
    });
  }

  async createSnapshot(req: CreateSnapshotRequest): Promise<CreateSnapshotResponse> {
    const name = checkName('name', req.name);
    const source = checkIdField('source_volume_id', req.sourceVolumeId);
    checkSnapshotParameters('parameters', req.parameters);
    const id = snapshotIdFor(name);
    return this.o.pool.locks.run(id, async () => {
      const existing = await this.o.pool.getSnapshot(id);
      if (existing) {
        if (existing.sourceVolumeId !== source)
          throw new CsiError(
            status.ALREADY_EXISTS,
            `name: a snapshot named ${JSON.stringify(name)} exists of another volume (${existing.sourceVolumeId})`,
          );
        return { snapshot: this.snapshot(existing) };
      }
      // The source's lock: a snapshot must not copy a volume mid-expansion or mid-deletion.
      const rec = await this.o.pool.locks
        .run(source, async () => {
          if (!(await this.o.pool.getVolume(source))) return this.o.pool.createSnapshot(id, name, source);
          return withFrozenFilesystem(this.o.pool.diskPath(source), () =>
            this.o.pool.createSnapshot(id, name, source),
          );
        })
        .catch((e) => Promise.reject(poolStatus(e)));
      return { snapshot: this.snapshot(rec) };
    });
  }

  async deleteSnapshot(req: DeleteSnapshotRequest): Promise<Record<string, never>> {
    const id = checkIdField('snapshot_id', req.snapshotId);
    await this.o.pool.locks.run(id, () => this.o.pool.deleteSnapshot(id));
    return {};
  }

  async getSnapshot(req: GetSnapshotRequest): Promise<GetSnapshotResponse> {
    const id = checkIdField('snapshot_id', req.snapshotId);
    const snap = await this.o.pool.getSnapshot(id);
    if (!snap) throw notFound(`snapshot ${JSON.stringify(id)} does not exist`);
    return { snapshot: this.snapshot(snap) };
  }

  async listSnapshots(req: ListSnapshotsRequest): Promise<ListSnapshotsResponse> {
    let all = await this.o.pool.listSnapshots();
    if (req.snapshotId) all = all.filter((s) => s.id === req.snapshotId);
    if (req.sourceVolumeId) all = all.filter((s) => s.sourceVolumeId === req.sourceVolumeId);
    const p = page(all, req.maxEntries, req.startingToken);
    return { entries: p.items.map((s) => ({ snapshot: this.snapshot(s) })), nextToken: p.nextToken };
  }
}
