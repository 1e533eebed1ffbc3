/**
 * The clone path of the DataVolume controller (CDI's pvc-clone and snapshot-clone
 * controllers with the `csi-clone` strategy and smart clone from a snapshot): the
 * DataVolume's claim is made with `dataSource` the source PVC or VolumeSnapshot, so the
 * CSI provisioner makes the volume as a clone or restore (on this project's driver a
 * reflink copy). Phases: CloneScheduled (waiting for the source: bound, populated, not
 * in use read-write, a snapshot ready), then CSICloneInProgress /
 * CloneFromSnapshotSourceInProgress (or WaitForFirstConsumer) until the claim is Bound,
 * then Succeeded. The source must be in the DataVolume's namespace and on the same
 * StorageClass; what CDI would fall back to a host-assisted copy for is refused with
 * CDI's reason (clone-claim.ts).
 */
import type { DataSource, DataVolume, StorageProfile } from '../../api/generated/cdi/types';
import type { Lister, ReconcileResult } from '../common/controller-ports';
import { bytesOf } from '../common/quantity';
import { AlreadyExistsError, ConflictError } from '../runtime/errors';
import { PersistentVolumeClaimType, PodType } from '../runtime/resources';
import type { ObjectClient } from '../runtime/types';
import { type ClaimSpec, claimSpecFor, type StorageClassInfo } from './claim-spec';
import { cloneClaim, cloneProblem } from './clone-claim';
import {
  type CloneSource,
  cloneSourceOf,
  podUsesClaimReadWrite,
  SELECTED_NODE_ANNOTATION,
  type VolumeSnapshotObject,
} from './clone-source';
import type { ClaimObject } from './datavolume-controller';
import { DvEvent, DvPhase, type WantedStatus } from './datavolume-status';

/** Writes a DataVolume's status and, on a change, an event (the DataVolume controller's). */
export type StatusWrite = (
  dv: DataVolume,
  wanted: WantedStatus,
  type: 'Normal' | 'Warning',
  reason: string,
  message: string,
) => Promise<void>;

export interface CloneDeps {
  client: ObjectClient;
  claims: Lister<ClaimObject>;
  dataVolumes: Lister<DataVolume>;
  dataSources: Lister<DataSource>;
  /** VolumeSnapshots; absent when the cluster serves no snapshot.storage.k8s.io kinds. */
  snapshots?: Lister<VolumeSnapshotObject>;
  storageClasses: () => StorageClassInfo[];
  storageProfiles: () => StorageProfile[];
  overheadOf: (className: string | undefined) => number;
  /** How often a clone whose source a pod uses looks again (default 5 s; pods are not watched). */
  sourcePollMs?: number;
}

type Base = (phase: string, claim: ClaimObject | undefined) => WantedStatus;

/** One reconcile's DataVolume and its status writer. */
interface Step {
  dv: DataVolume;
  base: Base;
  write: StatusWrite;
}

/** A ready source: its size and claim; or what the reconcile returns while waiting. */
type SourceState = { bytes: number; sourceClaim?: ClaimObject } | { wait: ReconcileResult | undefined };

const describe = (s: CloneSource) => `${s.namespace}/${s.name}`;

const isOwnedBy = (o: ClaimObject, owner: DataVolume) =>
  (o.metadata?.ownerReferences ?? []).some((r) => r.controller && r.uid === owner.metadata?.uid);

/** Writes `phase` with Ready False for `reason`, and the event. */
function report(s: Step, phase: string, type: 'Normal' | 'Warning', reason: string, message: string) {
  const status = { ...s.base(phase, undefined), ready: { status: 'False' as const, reason, message } };
  return s.write(s.dv, status, type, reason, message);
}

export class DataVolumeCloner {
  constructor(private readonly d: CloneDeps) {}

  /** One reconcile of clone DataVolume `dv` (valid by validateDataVolume). */
  async reconcile(dv: DataVolume, base: Base, write: StatusWrite): Promise<ReconcileResult | undefined> {
    const s: Step = { dv, base, write };
    const ns = dv.metadata?.namespace ?? '';
    const name = dv.metadata?.name ?? '';
    const claim = this.d.claims.get(`${ns}/${name}`);
    const resolved = cloneSourceOf(dv, (k) => this.d.dataSources.get(k));
    if (claim && !isOwnedBy(claim, dv)) {
      const message = `Resource "${name}" already exists and is not managed by DataVolume`;
      await report(s, DvPhase.Pending, 'Warning', DvEvent.ErrResourceExists, message);
      return undefined;
    }
    if (claim) return this.follow(s, claim, 'source' in resolved ? resolved.source : undefined);
    if ('problem' in resolved) {
      await report(s, DvPhase.Pending, 'Warning', resolved.problem.reason, resolved.problem.message);
      return undefined;
    }
    const source = resolved.source;
    if (source.namespace !== ns) {
      // A DataSource naming a claim of its own namespace: the validation saw only the ref.
      const where = source.via ? `DataSource ${source.via}` : 'spec.source';
      const message = `DataVolume/${name}: ${where}: cloning from namespace ${source.namespace} into ${ns} is not supported: the source must be in the DataVolume's namespace`;
      await report(s, DvPhase.Failed, 'Warning', DvEvent.InvalidSpec, message);
      return undefined;
    }
    const ready =
      source.kind === 'pvc' ? await this.pvcSource(s, source) : await this.snapshotSource(s, source);
    if ('wait' in ready) return ready.wait;
    return this.create(s, source, ready.bytes, ready.sourceClaim);
  }

  /** A source claim ready to clone: bound, populated, not used read-write by a pod. */
  private async pvcSource(s: Step, source: CloneSource): Promise<SourceState> {
    const key = describe(source);
    const into = `${s.dv.metadata?.namespace}/${s.dv.metadata?.name}`;
    const src = this.d.claims.get(key);
    if (!src) {
      const message = `The source pvc ${source.name} doesn't exist`;
      await report(s, s.dv.status?.phase || DvPhase.Pending, 'Warning', DvEvent.CloneWithoutSource, message);
      return { wait: undefined };
    }
    const scheduled = `Cloning from ${key} into ${into} scheduled`;
    if (src.status?.phase !== 'Bound') {
      const message = `${scheduled}: the source PVC is ${src.status?.phase ?? 'Pending'}`;
      await report(s, DvPhase.CloneScheduled, 'Normal', DvEvent.CloneScheduled, message);
      return { wait: undefined };
    }
    const sourceDv = this.d.dataVolumes.get(key);
    if (sourceDv && sourceDv.status?.phase !== DvPhase.Succeeded) {
      const message = `${scheduled}: the source PVC is not fully populated (DataVolume phase ${sourceDv.status?.phase ?? 'Pending'})`;
      await report(s, DvPhase.CloneScheduled, 'Normal', DvEvent.CloneScheduled, message);
      return { wait: undefined };
    }
    const pods = (await this.d.client.list(PodType, { namespace: source.namespace })).items;
    const users = pods.filter((p) => podUsesClaimReadWrite(p as never, source.name));
    if (users.length > 0) {
      const who = users.map((p) => `pod ${p.metadata?.namespace}/${p.metadata?.name}`).join(', ');
      const message = `${who} using PersistentVolumeClaim ${source.name}`;
      await report(s, DvPhase.CloneScheduled, 'Warning', DvEvent.CloneSourceInUse, message);
      return { wait: { requeueAfterMs: this.d.sourcePollMs ?? 5000 } };
    }
    const size = src.status?.capacity?.storage ?? src.spec?.resources?.requests?.storage;
    return { bytes: Number(bytesOf(size, 'status.capacity.storage') ?? 0), sourceClaim: src };
  }

  /** A source snapshot ready to restore. */
  private async snapshotSource(s: Step, source: CloneSource): Promise<SourceState> {
    if (!this.d.snapshots) {
      const message = `DataVolume/${s.dv.metadata?.name}: spec.source.snapshot: the cluster serves no snapshot.storage.k8s.io VolumeSnapshots`;
      await report(s, DvPhase.Failed, 'Warning', DvEvent.InvalidSpec, message);
      return { wait: undefined };
    }
    const snap = this.d.snapshots.get(describe(source));
    if (!snap) {
      const message = `The source snapshot ${source.name} doesn't exist`;
      await report(s, s.dv.status?.phase || DvPhase.Pending, 'Warning', DvEvent.CloneWithoutSource, message);
      return { wait: undefined };
    }
    if (snap.status?.readyToUse !== true) {
      const why = snap.status?.error?.message ? `: ${snap.status.error.message}` : '';
      const message = `Cloning from snapshot ${describe(source)} scheduled: the snapshot is not ready to use${why}`;
      await report(s, DvPhase.CloneScheduled, 'Normal', DvEvent.CloneScheduled, message);
      return { wait: undefined };
    }
    const from = snap.spec?.source?.persistentVolumeClaimName;
    return {
      bytes: Number(bytesOf(snap.status.restoreSize, 'status.restoreSize') ?? 0),
      sourceClaim: from ? this.d.claims.get(`${source.namespace}/${from}`) : undefined,
    };
  }

  /** Validates the target against the source and makes the claim. */
  private async create(
    s: Step,
    source: CloneSource,
    sourceBytes: number,
    sourceClaim: ClaimObject | undefined,
  ): Promise<ReconcileResult | undefined> {
    const { dv } = s;
    const name = dv.metadata?.name ?? '';
    const target = dv.spec.pvc ?? dv.spec.storage ?? {};
    const sized = target.resources?.requests?.storage !== undefined;
    // CDI: a storage-API clone without a size takes the source's.
    const requests = { ...(target.resources?.requests ?? {}), storage: String(sourceBytes) };
    const withSize: DataVolume = sized
      ? dv
      : { ...dv, spec: { ...dv.spec, storage: { ...target, resources: { ...target.resources, requests } } } };
    const rendered = claimSpecFor(
      withSize,
      this.d.storageClasses(),
      this.d.storageProfiles(),
      this.d.overheadOf,
    );
    if ('error' in rendered) {
      const message = `DataVolume/${name}: ${rendered.error.path}: ${rendered.error.message}`;
      await report(s, DvPhase.Pending, 'Warning', DvEvent.ErrClaimNotValid, message);
      return { requeueAfterMs: 30_000 };
    }
    const spec: ClaimSpec = rendered.spec;
    // The source's size already holds its filesystem's overhead: no second one on top.
    if (!sized) spec.resources = { requests: { storage: String(sourceBytes) } };
    const className = spec.storageClassName;
    const t = {
      source,
      sourceBytes,
      sourceClaim,
      spec,
      field: dv.spec.pvc ? 'spec.pvc' : 'spec.storage',
      profile: this.d.storageProfiles().find((p) => p.metadata?.name === className),
    };
    const problem = cloneProblem(t);
    if (problem) {
      await report(s, DvPhase.Failed, 'Warning', problem.reason, `DataVolume/${name}: ${problem.message}`);
      return undefined;
    }
    const cls = this.d.storageClasses().find((c) => c.metadata?.name === className);
    try {
      await this.d.client.create(PersistentVolumeClaimType, cloneClaim(dv, t, cls) as never);
    } catch (err) {
      if (err instanceof AlreadyExistsError || err instanceof ConflictError) return { requeueAfterMs: 1000 };
      throw err;
    }
    const message = `Cloning from ${describe(source)} into ${dv.metadata?.namespace}/${name} scheduled`;
    await s.write(dv, s.base(DvPhase.CloneScheduled, undefined), 'Normal', DvEvent.CloneScheduled, message);
    return undefined;
  }

  /** The claim exists: in progress until Bound, then Succeeded. */
  private async follow(s: Step, claim: ClaimObject, source: CloneSource | undefined) {
    const { dv, base, write } = s;
    const name = dv.metadata?.name ?? '';
    // The source as resolved now, else as the claim names it (a DataSource since changed).
    const named = (claim.spec as { dataSource?: { name?: string } } | undefined)?.dataSource?.name;
    const from = source ? describe(source) : `${dv.metadata?.namespace}/${named ?? ''}`;
    if (claim.status?.phase === 'Bound') {
      const done: WantedStatus = {
        ...base(DvPhase.Succeeded, claim),
        progress: '100.0%',
        ready: { status: 'True' },
        running: { status: 'False', reason: 'Completed' },
      };
      const message = `Successfully cloned from ${from} into ${dv.metadata?.namespace}/${name}`;
      await write(dv, done, 'Normal', DvEvent.CloneSucceeded, message);
      return undefined;
    }
    const cls = this.d.storageClasses().find((c) => c.metadata?.name === claim.spec?.storageClassName);
    if (
      cls?.volumeBindingMode === 'WaitForFirstConsumer' &&
      !claim.metadata?.annotations?.[SELECTED_NODE_ANNOTATION]
    ) {
      const message = `PVC ${name} is waiting for its first consumer`;
      await write(
        dv,
        base(DvPhase.WaitForFirstConsumer, claim),
        'Normal',
        DvPhase.WaitForFirstConsumer,
        message,
      );
      return undefined;
    }
    const fromSnapshot =
      (claim.spec as { dataSource?: { kind?: string } } | undefined)?.dataSource?.kind === 'VolumeSnapshot';
    const [phase, message] = fromSnapshot
      ? [
          DvPhase.CloneFromSnapshotSourceInProgress,
          `Creating PVC from snapshot source is in progress (for snapshot ${from})`,
        ]
      : [DvPhase.CSICloneInProgress, `CSI Volume clone in progress (for pvc ${from})`];
    await write(
      dv,
      { ...base(phase, claim), running: { status: 'True', reason: phase } },
      'Normal',
      phase,
      message,
    );
    return undefined;
  }
}
