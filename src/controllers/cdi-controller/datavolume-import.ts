/**
 * The import path of the DataVolume controller (CDI's import-controller, on the legacy
 * path where the importer pod is the claim's first consumer): once the DataVolume's claim
 * is there, an importer pod fills it; the DataVolume follows: ImportScheduled,
 * ImportInProgress, Succeeded, or Failed for a fatal error (a wrong checksum, a refused
 * image). Other importer failures (an unreachable URL) are retried with a new pod after a
 * backoff, counted in status.restartCount, the error in the Running condition and an
 * event. The outcome is remembered on the claim, so the pod can go. Apart from
 * ./datavolume-controller.ts, which validates, makes the claim and picks the path.
 */
import type { CDIConfig, DataVolume, StorageProfile } from '../../api/generated/cdi/types';
import { IMPORT_COMPLETE, parseTermination } from '../common/cdi-import-termination';
import type { Lister, ReconcileResult } from '../common/controller-ports';
import type { Pod } from '../common/pod';
import { AlreadyExistsError, ConflictError, NotFoundError } from '../runtime/errors';
import { PersistentVolumeClaimType, PodType } from '../runtime/resources';
import type { ObjectClient } from '../runtime/types';
import { CdiLabels } from './annotations';
import { claimSpecFor, filesystemOverhead, type StorageClassInfo } from './claim-spec';
import type { StatusWrite } from './clone-controller';
import type { BaseStatus, ClaimObject } from './datavolume-controller';
import { DvEvent, DvPhase } from './datavolume-status';
import { type ImporterPodOptions, importerPod, importerPodName } from './importer-pod';

/** The PVC annotation that remembers a fatal import error once its pod is gone. */
export const FATAL_ERROR_ANNOTATION = 'cdi.kubevirt.io/storage.import.fatalError';
/** Importer exit codes: 1 retry, 2 fatal (the termination message says `fatal`). */
const defaultRetryDelay = (n: number) => Math.min(5000 * 2 ** Math.max(0, n - 1), 300_000);

/** What {@link DataVolumeImporter} is given by the DataVolume controller. */
export interface ImportDeps {
  client: ObjectClient;
  claims: Lister<ClaimObject>;
  /** Importer pods, by `namespace/name`. */
  pods: Lister<Pod>;
  storageClasses: () => StorageClassInfo[];
  storageProfiles: () => StorageProfile[];
  cdiConfig: () => CDIConfig | undefined;
  importer: ImporterPodOptions;
  /** Backoff before the n-th retry (default 5s doubling, at most 5 minutes). */
  retryDelayMs?: (restarts: number) => number;
  now: () => Date;
}

/** What the import steps of one reconcile share: the DataVolume, its claim, its status so far. */
export interface ImportStep {
  key: string;
  dv: DataVolume;
  claim: ClaimObject;
  base: BaseStatus;
  restarts: number;
  write: StatusWrite;
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

/** The import done: Succeeded, Ready, the importer Completed. */
export function importSucceeded(
  write: StatusWrite,
  dv: DataVolume,
  base: BaseStatus,
  claim: ClaimObject,
): Promise<void> {
  return write(
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
function importFailed(
  write: StatusWrite,
  dv: DataVolume,
  base: BaseStatus,
  claim: ClaimObject,
  message: string,
): Promise<void> {
  return write(
    dv,
    { ...base(DvPhase.Failed, claim), running: { status: 'False', reason: DvEvent.Error, message } },
    'Warning',
    DvEvent.ImportFailed,
    `Failed to import into PVC ${dv.metadata?.name ?? ''}: ${message}`,
  );
}

/** The DataVolume controller's importer pods. */
export class DataVolumeImporter {
  /** When a failed import may be retried, by DataVolume key. */
  private readonly retryAt = new Map<string, number>();

  constructor(private readonly d: ImportDeps) {}

  /** One reconcile of an import DataVolume whose claim is there and its own. */
  async reconcile(step: ImportStep): Promise<ReconcileResult | undefined> {
    const { dv, claim, base, write } = step;
    const name = dv.metadata?.name ?? '';
    const ns = dv.metadata?.namespace;
    const ann = claim.metadata?.annotations ?? {};
    if (ann[CdiLabels.podPhase] === 'Succeeded') {
      await this.deletePod(ns, importerPodName(name));
      await importSucceeded(write, dv, base, claim);
      return undefined;
    }
    if (ann[FATAL_ERROR_ANNOTATION]) {
      const message = ann[FATAL_ERROR_ANNOTATION];
      await this.deletePod(ns, importerPodName(name));
      await importFailed(write, dv, base, claim, message);
      return undefined;
    }

    const pod = this.d.pods.get(`${ns}/${importerPodName(name)}`);
    if (!pod || pod.metadata?.deletionTimestamp) return this.start(step, pod !== undefined);
    return this.follow(step, pod);
  }

  /** DataVolume `key` is gone or going: its retry is forgotten and its import stopped. */
  async stop(key: string, dv: DataVolume | undefined): Promise<void> {
    this.retryAt.delete(key);
    await this.stopOrphanedImport(key, dv);
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

  private async start(step: ImportStep, podGoing: boolean): Promise<ReconcileResult | undefined> {
    const { key, dv, claim, base, restarts, write } = step;
    const name = dv.metadata?.name ?? '';
    const wait = (this.retryAt.get(key) ?? 0) - this.d.now().getTime();
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
    await write(
      dv,
      { ...base(DvPhase.ImportScheduled, claim), restartCount: count },
      'Normal',
      DvEvent.ImportScheduled,
      `Import into ${name} scheduled`,
    );
    return undefined;
  }

  private async follow(step: ImportStep, pod: Pod): Promise<ReconcileResult | undefined> {
    const { key, dv, claim, base, restarts, write } = step;
    const name = dv.metadata?.name ?? '';
    const ns = dv.metadata?.namespace;
    const cs = importerStatus(pod);
    switch (pod.status?.phase) {
      case 'Running':
        await write(
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
        await importSucceeded(write, dv, base, claim);
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
          await importFailed(write, dv, base, claim, message);
          return undefined;
        }
        const delay = (this.d.retryDelayMs ?? defaultRetryDelay)(restarts + 1);
        this.retryAt.set(key, this.d.now().getTime() + delay);
        await this.deletePod(ns, pod.metadata?.name ?? '');
        await write(
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
    await write(
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
}
