/**
 * The DataVolume controller (CDI's pkg/controller/datavolume import-controller, on the
 * legacy path where the importer pod is the claim's first consumer): a DataVolume gets
 * its PVC (same name, owned by it), then an importer pod filling it; the DataVolume
 * follows: Pending, PVCBound, ImportScheduled, ImportInProgress, Succeeded, or Failed for
 * a fatal error (a wrong checksum, a refused image, an invalid spec). Other importer
 * failures (an unreachable URL) are retried with a new pod after a backoff, counted in
 * status.restartCount, the error in the Running condition and an event.
 */
import { validateDataVolume } from '../../api/cdi/validate-datavolume';
import { formatFieldError } from '../../api/errors';
import type { CDIConfig, DataVolume, StorageProfile } from '../../api/generated/cdi/types';
import { IMPORT_COMPLETE, parseTermination } from '../common/cdi-import-termination';
import {
  type ControllerDeps,
  type KeyReconciler,
  type Lister,
  type ReconcileResult,
  timestamp,
} from '../common/controller-ports';
import type { Pod } from '../common/pod';
import { AlreadyExistsError, ConflictError, NotFoundError } from '../runtime/errors';
import { DataVolumeType, PersistentVolumeClaimType, PodType } from '../runtime/resources';
import { sameJson } from '../runtime/same-json';
import type { KubeObject } from '../runtime/types';
import { CdiLabels } from './annotations';
import { type ClaimSpec, claimSpecFor, filesystemOverhead, type StorageClassInfo } from './claim-spec';
import type { DataVolumeCloner } from './clone-controller';
import { isCloneDataVolume } from './clone-source';
import { dataVolumeClaim } from './datavolume-claim';
import { boundCondition, DvEvent, DvPhase, renderStatus, type WantedStatus } from './datavolume-status';
import { uploadStatus } from './datavolume-upload';
import { type ImporterPodOptions, importerPod, importerPodName } from './importer-pod';
import { adoptClaim, populatedFor } from './populated-claim';

/** A PVC as this controller reads and writes it. */
export interface ClaimObject extends KubeObject {
  spec?: ClaimSpec;
  status?: { phase?: string; capacity?: Record<string, string> };
}

export interface DataVolumeControllerDeps extends ControllerDeps {
  dataVolumes: Lister<DataVolume>;
  claims: Lister<ClaimObject>;
  /** Importer pods, by `namespace/name`. */
  pods: Lister<Pod>;
  storageClasses: () => StorageClassInfo[];
  storageProfiles: () => StorageProfile[];
  cdiConfig: () => CDIConfig | undefined;
  /** The clone path (`source.pvc`, `source.snapshot`, `sourceRef`); without it clones wait. */
  cloner?: DataVolumeCloner;
  importer: ImporterPodOptions;
  /** Why upload sources are refused here (no upload controller runs: local mode); none: they work. */
  uploadsRefused?: string;
  /** Backoff before the n-th retry (default 5s doubling, at most 5 minutes). */
  retryDelayMs?: (restarts: number) => number;
}

/** The PVC annotation that remembers a fatal import error once its pod is gone. */
export const FATAL_ERROR_ANNOTATION = 'cdi.kubevirt.io/storage.import.fatalError';
/** Importer exit codes: 1 retry, 2 fatal (the termination message says `fatal`). */
const defaultRetryDelay = (n: number) => Math.min(5000 * 2 ** Math.max(0, n - 1), 300_000);

/** The status every write starts from: `phase`, the claim when there is one, nothing ready or running. */
type BaseStatus = (phase: string, claim: ClaimObject | undefined) => WantedStatus;

/** What the import steps of one reconcile share: the DataVolume, its claim, its status so far. */
interface ImportStep {
  key: string;
  dv: DataVolume;
  claim: ClaimObject;
  base: BaseStatus;
  restarts: number;
}

/**
 * The container status that says how the import goes: an init container (a registry
 * import's image copy) that failed or waits (its image missing), else the importer's.
 */
function importerStatus(pod: Pod) {
  const init = pod.status?.initContainerStatuses?.find(
    (c) => (c.state?.terminated && c.state.terminated.exitCode !== 0) || c.state?.waiting,
  );
  return init ?? pod.status?.containerStatuses?.[0];
}

const isOwnedBy = (o: KubeObject, owner: KubeObject) =>
  (o.metadata?.ownerReferences ?? []).some((r) => r.controller && r.uid === owner.metadata?.uid);

export class DataVolumeController implements KeyReconciler {
  /** When a failed import may be retried, by DataVolume key. */
  private readonly retryAt = new Map<string, number>();

  constructor(private readonly d: DataVolumeControllerDeps) {}

  private now(): Date {
    return this.d.now?.() ?? new Date();
  }

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const dv = this.d.dataVolumes.get(key);
    if (!dv || dv.metadata?.deletionTimestamp) {
      this.retryAt.delete(key);
      await this.stopOrphanedImport(key, dv);
      return undefined;
    }
    const name = dv.metadata?.name ?? '';
    const ns = dv.metadata?.namespace;
    const restarts = dv.status?.restartCount ?? 0;
    const base: BaseStatus = (phase, claim) => ({
      phase,
      claimName: claim ? name : undefined,
      progress: 'N/A',
      restartCount: restarts,
      bound: boundCondition(claim),
      ready: { status: 'False' },
      running: { status: 'False' },
    });

    const errs = validateDataVolume(dv);
    if (dv.spec.source?.upload && this.d.uploadsRefused)
      errs.push({ path: 'spec.source.upload', message: this.d.uploadsRefused });
    if (isCloneDataVolume(dv) && !this.d.cloner)
      errs.push({
        path: dv.spec.sourceRef ? 'spec.sourceRef' : 'spec.source',
        message:
          "clone sources need a CSI provisioner that clones, which does not run here (local mode without its CSI pool: see `up`'s storage line)",
      });
    if (errs.length > 0) {
      const message = errs.map((e) => formatFieldError('DataVolume', name, e)).join('; ');
      await this.refuse(dv, base(DvPhase.Failed, undefined), DvEvent.InvalidSpec, message);
      return undefined;
    }

    if (isCloneDataVolume(dv)) return this.d.cloner?.reconcile(dv, base, (...a) => this.write(...a));

    let claim = this.d.claims.get(key);
    if (!claim) {
      const className = (dv.spec.pvc ?? dv.spec.storage)?.storageClassName;
      const rendered = claimSpecFor(dv, this.d.storageClasses(), this.d.storageProfiles(), (c) =>
        filesystemOverhead(this.d.cdiConfig(), c ?? className),
      );
      if ('error' in rendered) {
        const message = `DataVolume/${name}: ${rendered.error.path}: ${rendered.error.message}`;
        await this.refuse(dv, base(DvPhase.Pending, undefined), DvEvent.ErrClaimNotValid, message);
        return { requeueAfterMs: 30_000 };
      }
      try {
        claim = (await this.d.client.create(
          PersistentVolumeClaimType,
          dataVolumeClaim(dv, rendered.spec),
        )) as ClaimObject;
      } catch (err) {
        if (!(err instanceof AlreadyExistsError || err instanceof ConflictError)) throw err;
        return { requeueAfterMs: 1000 }; // a claim of that name exists: the cache shows it shortly
      }
      await this.write(dv, base(DvPhase.Pending, claim), 'Normal', DvEvent.Pending, `PVC ${name} Pending`);
      return undefined;
    }
    if (populatedFor(claim, dv)) {
      await this.succeeded(dv, base, await adoptClaim(this.d.client, claim, dv));
      return undefined;
    }
    if (!isOwnedBy(claim, dv)) {
      const message = `Resource "${name}" already exists and is not managed by DataVolume`;
      await this.refuse(dv, base(DvPhase.Pending, undefined), DvEvent.ErrResourceExists, message);
      return undefined;
    }

    // Uploads: the upload controller runs the pod; the DataVolume follows its claim.
    if (dv.spec.source?.upload) {
      const step = uploadStatus(dv, claim, (phase) => base(phase, claim));
      await this.write(dv, step.status, step.type, step.reason, step.message);
      return undefined;
    }

    const ann = claim.metadata?.annotations ?? {};
    if (ann[CdiLabels.podPhase] === 'Succeeded') {
      await this.deletePod(ns, importerPodName(name));
      await this.succeeded(dv, base, claim);
      return undefined;
    }
    if (ann[FATAL_ERROR_ANNOTATION]) {
      const message = ann[FATAL_ERROR_ANNOTATION];
      await this.deletePod(ns, importerPodName(name));
      await this.failed(dv, base, claim, message);
      return undefined;
    }

    const pod = this.d.pods.get(`${ns}/${importerPodName(name)}`);
    const step: ImportStep = { key, dv, claim, base, restarts };
    if (!pod || pod.metadata?.deletionTimestamp) return this.startImport(step, pod !== undefined);
    return this.followImport(step, pod);
  }

  /**
   * A DataVolume deleted (or being deleted) mid-import: its importer pod is deleted at
   * once, as CDI's import controller deletes the pod of a claim being deleted. Else the
   * pod holds the claim (the API server's pvc-protection) until it has written the whole
   * image into a volume nothing will use, and only then do the claim, the PV and the
   * pool's volume go.
   */
  private async stopOrphanedImport(key: string, dv: DataVolume | undefined): Promise<void> {
    const [ns, name] = key.split('/');
    const pod = this.d.pods.get(`${ns}/${importerPodName(name)}`);
    if (!pod || pod.metadata?.deletionTimestamp) return;
    // Only the pod made for this DataVolume (a new one of the same name may have its own).
    const made = pod.metadata?.annotations?.[CdiLabels.createdForDataVolume];
    if (dv && made !== dv.metadata?.uid) return;
    if (!dv) {
      const claim = this.d.claims.get(key);
      const ownerGone = !claim || claim.metadata?.deletionTimestamp !== undefined;
      const ownedByDv = claim?.metadata?.ownerReferences?.some(
        (r) => r.kind === 'DataVolume' && r.uid === made,
      );
      if (!ownerGone && !ownedByDv) return;
    }
    await this.deletePod(ns, pod.metadata?.name ?? '');
  }

  /** A DataVolume refused before its import (`status` for its phase): Ready False for `reason`, a Warning. */
  private refuse(dv: DataVolume, status: WantedStatus, reason: string, message: string): Promise<void> {
    return this.write(
      dv,
      { ...status, ready: { status: 'False', reason, message } },
      'Warning',
      reason,
      message,
    );
  }

  /** The import done: Succeeded, Ready, the importer Completed. */
  private succeeded(dv: DataVolume, base: BaseStatus, claim: ClaimObject): Promise<void> {
    return this.write(
      dv,
      {
        ...base(DvPhase.Succeeded, claim),
        progress: '100.0%',
        ready: { status: 'True' },
        running: { status: 'False', reason: 'Completed' },
      },
      'Normal',
      DvEvent.ImportSucceeded,
      `Successfully imported into PVC ${dv.metadata?.name ?? ''}`,
    );
  }

  /** A fatal import error: Failed, the importer's Running condition carrying it. */
  private failed(dv: DataVolume, base: BaseStatus, claim: ClaimObject, message: string): Promise<void> {
    return this.write(
      dv,
      { ...base(DvPhase.Failed, claim), running: { status: 'False', reason: DvEvent.Error, message } },
      'Warning',
      DvEvent.ImportFailed,
      `Failed to import into PVC ${dv.metadata?.name ?? ''}: ${message}`,
    );
  }

  private async startImport(step: ImportStep, podGoing: boolean): Promise<ReconcileResult | undefined> {
    const { key, dv, claim, base, restarts } = step;
    const name = dv.metadata?.name ?? '';
    const wait = (this.retryAt.get(key) ?? 0) - this.now().getTime();
    if (podGoing || wait > 0) return { requeueAfterMs: podGoing ? 1000 : wait };
    const wasRunning =
      dv.status?.phase === DvPhase.ImportScheduled || dv.status?.phase === DvPhase.ImportInProgress;
    const spec = claim.spec;
    const volumeMode = spec?.volumeMode === 'Block' ? 'Block' : 'Filesystem';
    const className = spec?.storageClassName;
    const overhead = volumeMode === 'Filesystem' ? filesystemOverhead(this.d.cdiConfig(), className) : 0;
    const target = dv.spec.pvc ?? dv.spec.storage;
    const requested = claimSpecFor(dv, this.d.storageClasses(), this.d.storageProfiles(), () => overhead);
    const size = 'error' in requested ? Number.NaN : requested.requestedBytes;
    const pod = importerPod(
      { dv, claim, volumeMode, imageSizeBytes: Number.isFinite(size) ? size : 0, overhead },
      this.d.importer,
    );
    if (!Number.isFinite(size) || !target) return undefined;
    try {
      await this.d.client.create(PodType, pod as never);
    } catch (err) {
      if (err instanceof AlreadyExistsError || err instanceof ConflictError) return { requeueAfterMs: 1000 };
      throw err;
    }
    // A pod that vanished mid-import (killed, evicted) counts as a restart, as CDI counts them.
    const count = wasRunning ? restarts + 1 : restarts;
    await this.write(
      dv,
      { ...base(DvPhase.ImportScheduled, claim), restartCount: count },
      'Normal',
      DvEvent.ImportScheduled,
      `Import into ${name} scheduled`,
    );
    return undefined;
  }

  private async followImport(step: ImportStep, pod: Pod): Promise<ReconcileResult | undefined> {
    const { key, dv, claim, base, restarts } = step;
    const name = dv.metadata?.name ?? '';
    const ns = dv.metadata?.namespace;
    const cs = importerStatus(pod);
    switch (pod.status?.phase) {
      case 'Running':
        await this.write(
          dv,
          { ...base(DvPhase.ImportInProgress, claim), running: { status: 'True', reason: 'Pod is running' } },
          'Normal',
          DvEvent.ImportInProgress,
          `Import into ${name} in progress`,
        );
        return undefined;
      case 'Succeeded': {
        const result = parseTermination(cs?.state?.terminated?.message);
        if (result && result.message !== IMPORT_COMPLETE) break;
        // Remembered on the claim, so the pod can go and a restarted controller still knows.
        await this.annotateClaim(claim, { [CdiLabels.podPhase]: 'Succeeded' });
        await this.deletePod(ns, pod.metadata?.name ?? '');
        this.retryAt.delete(key);
        await this.succeeded(dv, base, claim);
        return undefined;
      }
      case 'Failed': {
        const result = parseTermination(cs?.state?.terminated?.message);
        const t = cs?.state?.terminated;
        const message =
          result?.message ??
          `the importer exited with code ${t?.exitCode ?? 'unknown'} (${t?.reason ?? pod.status?.phase ?? 'Failed'}) and left no message`;
        if (result?.fatal) {
          await this.annotateClaim(claim, { [FATAL_ERROR_ANNOTATION]: message });
          await this.deletePod(ns, pod.metadata?.name ?? '');
          await this.failed(dv, base, claim, message);
          return undefined;
        }
        const delay = (this.d.retryDelayMs ?? defaultRetryDelay)(restarts + 1);
        this.retryAt.set(key, this.now().getTime() + delay);
        await this.deletePod(ns, pod.metadata?.name ?? '');
        await this.write(
          dv,
          {
            ...base(DvPhase.ImportScheduled, claim),
            restartCount: restarts + 1,
            running: { status: 'False', reason: DvEvent.Error, message },
          },
          'Warning',
          DvEvent.Error,
          `Unable to import into PVC ${name}: ${message}`,
        );
        return { requeueAfterMs: delay };
      }
      default:
        break;
    }
    const waiting = cs?.state?.waiting;
    await this.write(
      dv,
      {
        ...base(DvPhase.ImportScheduled, claim),
        running: { status: 'False', reason: waiting?.reason ?? 'Pending', message: waiting?.message },
      },
      'Normal',
      DvEvent.ImportScheduled,
      `Import into ${name} scheduled`,
    );
    return undefined;
  }

  private async annotateClaim(claim: ClaimObject, add: Record<string, string>): Promise<void> {
    await this.d.client.patch(
      PersistentVolumeClaimType,
      claim.metadata?.name ?? '',
      { metadata: { annotations: add } },
      {
        namespace: claim.metadata?.namespace,
        type: 'merge',
      } as never,
    );
  }

  private async deletePod(ns: string | undefined, name: string): Promise<void> {
    if (!this.d.pods.get(`${ns}/${name}`)) return;
    try {
      await this.d.client.delete(PodType, name, { namespace: ns });
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
    }
  }

  /** Writes the status when it changed; the event goes with a change of phase or reason. */
  private async write(
    dv: DataVolume,
    wanted: WantedStatus,
    type: 'Normal' | 'Warning',
    reason: string,
    message: string,
  ): Promise<void> {
    const now = timestamp(this.now());
    const status = renderStatus(dv.status, wanted, now);
    if (sameJson(dv.status ?? {}, status)) return;
    const before = dv.status;
    const changed =
      before?.phase !== status.phase ||
      (before?.restartCount ?? 0) !== status.restartCount ||
      JSON.stringify(before?.conditions?.map((c) => [c.type, c.reason, c.message])) !==
        JSON.stringify(status.conditions?.map((c) => [c.type, c.reason, c.message]));
    try {
      await this.d.client.updateStatus(DataVolumeType, { ...dv, status } as never);
    } catch (err) {
      if (err instanceof ConflictError || err instanceof NotFoundError) return;
      throw err;
    }
    if (changed)
      this.d.recorder.event(
        { ...dv, apiVersion: 'cdi.kubevirt.io/v1beta1', kind: 'DataVolume' },
        type,
        reason,
        message,
      );
  }
}
