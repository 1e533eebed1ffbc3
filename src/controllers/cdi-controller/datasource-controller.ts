/**
 * The DataSource controller (CDI's datasource-controller): a DataSource's `Ready`
 * condition says whether what it names can be cloned from: its PVC exists and, when a
 * DataVolume made it, that DataVolume Succeeded; or its VolumeSnapshot is readyToUse.
 * `status.source` is the resolved source while Ready, else empty; reasons and messages
 * are CDI's (NotFound, SnapshotNotReady, the DataVolume's phase, NoSource, and the
 * reference-chain errors).
 */
import type { DataSource, DataSourceCondition, DataVolume } from '../../api/generated/cdi/types';
import type { ControllerDeps, KeyReconciler, Lister, ReconcileResult } from '../common/controller-ports';
import { timestamp } from '../common/controller-ports';
import { ConflictError, NotFoundError } from '../runtime/errors';
import { DataSourceType } from '../runtime/resources';
import { sameJson } from '../runtime/same-json';
import {
  type CloneSource,
  DataSourceReason,
  resolveDataSource,
  type VolumeSnapshotObject,
} from './clone-source';
import type { ClaimObject } from './datavolume-controller';

export interface DataSourceControllerDeps extends ControllerDeps {
  dataSources: Lister<DataSource>;
  claims: Lister<ClaimObject>;
  dataVolumes: Lister<DataVolume>;
  /** VolumeSnapshots; absent when the cluster serves none (a snapshot source is then NotFound). */
  snapshots?: Lister<VolumeSnapshotObject>;
}

type Ready = { status: 'True' | 'False'; reason: string; message: string };

const READY: Ready = { status: 'True', reason: 'Ready', message: 'DataSource is ready to be consumed' };

export class DataSourceController implements KeyReconciler {
  constructor(private readonly d: DataSourceControllerDeps) {}

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const ds = this.d.dataSources.get(key);
    if (!ds || ds.metadata?.deletionTimestamp) return undefined;
    const resolved = resolveDataSource(ds, (k) => this.d.dataSources.get(k));
    let ready: Ready;
    let source: CloneSource | undefined;
    if ('problem' in resolved) ready = { status: 'False', ...resolved.problem };
    else {
      source = resolved.source;
      ready = source.kind === 'pvc' ? this.pvcReady(source) : this.snapshotReady(source);
    }
    const wanted: DataSource['status'] = {
      ...ds.status,
      source:
        ready.status === 'True' && source
          ? { [source.kind]: { namespace: source.namespace, name: source.name } }
          : {},
      conditions: [this.condition(ds, ready)],
    };
    if (sameJson(ds.status ?? {}, wanted)) return undefined;
    try {
      await this.d.client.updateStatus(DataSourceType, { ...ds, status: wanted } as never);
    } catch (err) {
      if (err instanceof ConflictError) return { requeueAfterMs: 500 };
      if (!(err instanceof NotFoundError)) throw err;
    }
    return undefined;
  }

  private pvcReady(s: CloneSource): Ready {
    const key = `${s.namespace}/${s.name}`;
    const dv = this.d.dataVolumes.get(key);
    if (dv) {
      const phase = dv.status?.phase ?? '';
      return phase === 'Succeeded'
        ? READY
        : { status: 'False', reason: phase, message: `Import DataVolume phase ${phase}` };
    }
    return this.d.claims.get(key)
      ? READY
      : { status: 'False', reason: DataSourceReason.NotFound, message: 'PVC not found' };
  }

  private snapshotReady(s: CloneSource): Ready {
    const snap = this.d.snapshots?.get(`${s.namespace}/${s.name}`);
    if (!snap) return { status: 'False', reason: DataSourceReason.NotFound, message: 'Snapshot not found' };
    return snap.status?.readyToUse === true
      ? READY
      : { status: 'False', reason: 'SnapshotNotReady', message: 'Snapshot phase is not ready' };
  }

  /** The Ready condition, its times kept while unchanged. */
  private condition(ds: DataSource, r: Ready): DataSourceCondition {
    const prev = ds.status?.conditions?.find((c) => c.type === 'Ready');
    if (prev && prev.status === r.status && prev.reason === r.reason && prev.message === r.message)
      return prev;
    const now = timestamp(this.d.now?.() ?? new Date());
    return {
      type: 'Ready',
      status: r.status,
      reason: r.reason,
      message: r.message,
      lastHeartbeatTime: now,
      lastTransitionTime: prev?.status === r.status ? (prev.lastTransitionTime ?? now) : now,
    };
  }
}
