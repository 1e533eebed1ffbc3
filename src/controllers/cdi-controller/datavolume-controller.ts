/**
 * The DataVolume controller (CDI's pkg/controller/datavolume import-controller, on the
 * legacy path where the importer pod is the claim's first consumer): a DataVolume gets
 * its PVC (same name, owned by it), then an importer pod filling it; the DataVolume
 * follows: Pending, PVCBound, ImportScheduled, ImportInProgress, Succeeded, or Failed for
 * a fatal error (a wrong checksum, a refused image, an invalid spec). Other importer
 * failures (an unreachable URL) are retried with a new pod after a backoff, counted in
 * status.restartCount, the error in the Running condition and an event. This file
 * validates, makes the claim and picks the path; the importer pod's part is in
 * ./datavolume-import.ts, clones in ./clone-controller.ts, uploads in ./datavolume-upload.ts.
 */
import { validateDataVolume } from '../../api/cdi/validate-datavolume';
import { formatFieldError } from '../../api/errors';
import type { CDIConfig, DataVolume, StorageProfile } from '../../api/generated/cdi/types';
import {
  type ControllerDeps,
  type KeyReconciler,
  type Lister,
  type ReconcileResult,
  timestamp,
} from '../common/controller-ports';
import type { Pod } from '../common/pod';
import { AlreadyExistsError, ConflictError, NotFoundError } from '../runtime/errors';
import { DataVolumeType, PersistentVolumeClaimType } from '../runtime/resources';
import { sameJson } from '../runtime/same-json';
import type { KubeObject } from '../runtime/types';
import { type ClaimSpec, claimSpecFor, filesystemOverhead, type StorageClassInfo } from './claim-spec';
import type { DataVolumeCloner, StatusWrite } from './clone-controller';
import { isCloneDataVolume } from './clone-source';
import { dataVolumeClaim } from './datavolume-claim';
import { DataVolumeImporter, importSucceeded } from './datavolume-import';
import { boundCondition, DvEvent, DvPhase, renderStatus, type WantedStatus } from './datavolume-status';
import { uploadStatus } from './datavolume-upload';
import type { ImporterPodOptions } from './importer-pod';
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

/** The status every write starts from: `phase`, the claim when there is one, nothing ready or running. */
export type BaseStatus = (phase: string, claim: ClaimObject | undefined) => WantedStatus;

const isOwnedBy = (o: KubeObject, owner: KubeObject) =>
  (o.metadata?.ownerReferences ?? []).some((r) => r.controller && r.uid === owner.metadata?.uid);

export class DataVolumeController implements KeyReconciler {
  /** The import path (./datavolume-import). */
  private readonly importer: DataVolumeImporter;

  constructor(private readonly d: DataVolumeControllerDeps) {
    this.importer = new DataVolumeImporter({ ...d, now: () => this.now() });
  }

  private now(): Date {
    return this.d.now?.() ?? new Date();
  }

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const dv = this.d.dataVolumes.get(key);
    if (!dv || dv.metadata?.deletionTimestamp) {
      await this.importer.stop(key, dv);
      return undefined;
    }
    const name = dv.metadata?.name ?? '';
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

    const write: StatusWrite = (...a) => this.write(...a);
    if (isCloneDataVolume(dv)) return this.d.cloner?.reconcile(dv, base, write);

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
      await importSucceeded(write, dv, base, await adoptClaim(this.d.client, claim, dv));
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

    return this.importer.reconcile({ key, dv, claim, base, restarts, write });
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
