/**
 * The upload controller (CDI's pkg/controller/upload-controller.go): for every PVC
 * annotated `cdi.kubevirt.io/storage.upload.target` (an upload DataVolume's claim, or one
 * `virtctl image-upload pvc` made), the upload pod and its Service, with a serving
 * certificate from the install's CA; the pod's phase and readiness are mirrored onto the
 * PVC (`storage.pod.phase`, `storage.pod.ready`), which the upload proxy, virtctl and the
 * DataVolume controller read. Once the pod Succeeded (`Upload Complete`) the phase stays
 * Succeeded on the claim and the pod, Service and Secret are deleted.
 */
import { parseTermination } from '../common/cdi-import-termination';
import {
  POD_PHASE_ANNOTATION,
  POD_READY_ANNOTATION,
  UPLOAD_CLIENT_NAME,
  UPLOAD_CLIENT_NAME_ANNOTATION,
  UPLOAD_ERROR_ANNOTATION,
  UPLOAD_POD_ANNOTATION,
  UPLOAD_REQUEST_ANNOTATION,
  uploadResourceName,
} from '../common/cdi-upload';
import type { ControllerDeps, KeyReconciler, Lister, ReconcileResult } from '../common/controller-ports';
import type { Pod } from '../common/pod';
import { AlreadyExistsError, ConflictError, NotFoundError } from '../runtime/errors';
import { PersistentVolumeClaimType, PodType, SecretType, ServiceType } from '../runtime/resources';
import type { KubeObject } from '../runtime/types';
import type { ClaimObject } from './datavolume-controller';
import type { ImporterPodOptions } from './importer-pod';
import { uploadCertSecret, uploadPod, uploadService, uploadServiceNames } from './upload-pod';

/** CDI's upload server's message on success. */
export const UPLOAD_COMPLETE = 'Upload Complete';

/** Serving certificates for upload pods, from the install's CA (virt-controller's issuer). */
export interface UploadCertIssuer {
  /** The CA bundle the upload proxy's client certificate chains to. */
  caBundle(): Promise<string>;
  issue(commonName: string, dnsNames: string[]): Promise<{ cert: string; key: string }>;
  /** How long an issued certificate lasts and how long before its end the pod is replaced. */
  durationMs?: number;
  renewBeforeMs?: number;
}

export interface UploadControllerDeps extends ControllerDeps {
  claims: Lister<ClaimObject>;
  /** Pods labelled app=containerized-data-importer, by `namespace/name`. */
  pods: Lister<Pod>;
  services: Lister<KubeObject>;
  certs: UploadCertIssuer;
  image: ImporterPodOptions;
  /** What the pod is told about the disk: the DataVolume's size and overhead (none: the volume's). */
  diskFor: (claim: ClaimObject) => { imageSizeBytes?: number; overhead: number };
}

const isReady = (pod: Pod) =>
  pod.status?.phase === 'Running' &&
  (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

export class UploadController implements KeyReconciler {
  constructor(private readonly d: UploadControllerDeps) {}

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const claim = this.d.claims.get(key);
    const ann = claim?.metadata?.annotations ?? {};
    if (!claim || claim.metadata?.deletionTimestamp || !(UPLOAD_REQUEST_ANNOTATION in ann)) return undefined;
    const ns = claim.metadata?.namespace ?? '';
    const name = uploadResourceName(claim.metadata?.name ?? '');
    const pod = this.d.pods.get(`${ns}/${name}`);
    if (ann[POD_PHASE_ANNOTATION] === 'Succeeded') {
      await this.cleanup(ns, name, pod);
      return undefined;
    }
    if (!this.d.services.get(`${ns}/${name}`))
      await this.createIgnoringExists(ServiceType, uploadService(claim));
    if (!pod) {
      // The cache may not show a pod made a moment ago: ask the API server before making
      // one (startPod replaces the certificate Secret, which such a pod is using).
      const live = await this.d.client.get(PodType, name, ns).catch((e: unknown) => {
        if (e instanceof NotFoundError) return undefined;
        throw e;
      });
      if (live) return { requeueAfterMs: 500 };
      if (!(await this.startPod(claim))) return { requeueAfterMs: 1000 };
      await this.annotate(claim, {
        [UPLOAD_POD_ANNOTATION]: name,
        [UPLOAD_CLIENT_NAME_ANNOTATION]: UPLOAD_CLIENT_NAME,
        [POD_PHASE_ANNOTATION]: 'Pending',
        [POD_READY_ANNOTATION]: 'false',
      });
      return undefined;
    }
    if (pod.metadata?.deletionTimestamp) return { requeueAfterMs: 1000 };
    const cs = pod.status?.containerStatuses?.[0];
    const phase = pod.status?.phase ?? 'Pending';
    if (phase === 'Succeeded') {
      const result = parseTermination(cs?.state?.terminated?.message);
      if (result?.message === UPLOAD_COMPLETE) {
        await this.annotate(claim, { [POD_PHASE_ANNOTATION]: 'Succeeded', [POD_READY_ANNOTATION]: 'false' });
        await this.cleanup(ns, name, pod);
        return undefined;
      }
    }
    if (phase === 'Succeeded' || phase === 'Failed') {
      // Not an upload done (a pod that died otherwise): a new pod waits for the next try.
      await this.deleteIgnoringMissing(PodType, ns, name);
      return { requeueAfterMs: 1000 };
    }
    // A failed async upload restarted the container: its message says why.
    const lastError = parseTermination(cs?.lastState?.terminated?.message)?.message;
    await this.annotate(claim, {
      [POD_PHASE_ANNOTATION]: phase,
      [POD_READY_ANNOTATION]: String(isReady(pod)),
      ...(lastError && lastError !== ann[UPLOAD_ERROR_ANNOTATION]
        ? { [UPLOAD_ERROR_ANNOTATION]: lastError }
        : {}),
    });
    return undefined;
  }

  /** The pod and its certificate; false when an old Secret was in the way (try again). */
  private async startPod(claim: ClaimObject): Promise<boolean> {
    const names = uploadServiceNames(claim);
    const [pair, bundle] = await Promise.all([this.d.certs.issue(names[2]!, names), this.d.certs.caBundle()]);
    const secret = uploadCertSecret(claim, pair, bundle);
    // A Secret left by an earlier pod (its certificate near its end) goes: the new pod gets a new one.
    await this.deleteIgnoringMissing(SecretType, secret.metadata.namespace ?? '', secret.metadata.name);
    try {
      await this.d.client.create(SecretType, secret as never);
    } catch (err) {
      if (!(err instanceof AlreadyExistsError || err instanceof ConflictError)) throw err;
      return false;
    }
    const disk = this.d.diskFor(claim);
    const { durationMs, renewBeforeMs } = this.d.certs;
    // The server stops when idle before its certificate ends; a new pod gets a new one.
    const deadline =
      durationMs === undefined
        ? undefined
        : new Date((this.d.now?.() ?? new Date()).getTime() + durationMs - (renewBeforeMs ?? 0))
            .toISOString()
            .replace(/\.\d+Z$/, 'Z');
    await this.createIgnoringExists(
      PodType,
      uploadPod(
        { claim, imageSizeBytes: disk.imageSizeBytes, overhead: disk.overhead, deadline },
        this.d.image,
      ),
    );
    return true;
  }

  /** Only the annotations that differ are written. */
  private async annotate(claim: ClaimObject, add: Record<string, string>): Promise<void> {
    const have = claim.metadata?.annotations ?? {};
    const changed = Object.fromEntries(Object.entries(add).filter(([k, v]) => have[k] !== v));
    if (Object.keys(changed).length === 0) return;
    await this.d.client.patch(
      PersistentVolumeClaimType,
      claim.metadata?.name ?? '',
      { metadata: { annotations: changed } },
      { namespace: claim.metadata?.namespace, type: 'merge' } as never,
    );
  }

  private async cleanup(ns: string, name: string, pod: Pod | undefined): Promise<void> {
    if (pod && !pod.metadata?.deletionTimestamp) await this.deleteIgnoringMissing(PodType, ns, name);
    if (this.d.services.get(`${ns}/${name}`)) await this.deleteIgnoringMissing(ServiceType, ns, name);
    await this.deleteIgnoringMissing(SecretType, ns, name);
  }

  private async createIgnoringExists(type: typeof PodType, obj: unknown): Promise<void> {
    try {
      await this.d.client.create(type, obj as never);
    } catch (err) {
      if (!(err instanceof AlreadyExistsError || err instanceof ConflictError)) throw err;
    }
  }

  private async deleteIgnoringMissing(type: typeof PodType, ns: string, name: string): Promise<void> {
    try {
      await this.d.client.delete(type, name, { namespace: ns });
    } catch (err) {
      if (!(err instanceof NotFoundError)) throw err;
    }
  }
}
