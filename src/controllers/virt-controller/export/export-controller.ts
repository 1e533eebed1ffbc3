/**
 * The VirtualMachineExport controller (upstream's pkg/storage/export/export): for an
 * export whose source can be exported (sources.ts) it makes the Service, the token Secret
 * (unless `spec.tokenSecretRef` names the user's), the manifest ConfigMap (VM sources), the
 * exporter pod and, once that pod exists, its TLS Secret (a certificate for the Service's
 * names from the install's CA, owned by the pod). Status: `Pending` until the pod is ready,
 * `Ready` with `links.internal` then (and `links.external` when an Ingress leads to the
 * export proxy), `Terminated` when the server ended, `Skipped` for a
 * source without volumes. A source that becomes unavailable (its VM starts, another pod
 * mounts the claim) has the pod deleted (ExportPaused) until it is free again. At
 * `creationTimestamp + ttlDuration` (default 2 h) the export is deleted, and with it what
 * it owns; the server stops by itself at that deadline, or earlier before its certificate
 * ends, and is then replaced with a new certificate.
 */
import { randomBytes } from 'node:crypto';
import { parseDuration } from '../../../api/duration';
import type {
  Condition,
  VirtualMachineExport,
  VirtualMachineExportStatus,
} from '../../../api/generated/types';
import { validateVirtualMachineExport } from '../../../api/validation/vmexport';
import type { EventRecorder, Lister, ReconcileResult } from '../../common/controller-ports';
import { controllerRef } from '../../common/owner-ref';
import type { Pod } from '../../common/pod';
import { AlreadyExistsError, NotFoundError } from '../../runtime/errors';
import {
  ConfigMapType,
  PersistentVolumeClaimType,
  PodType,
  SecretType,
  ServiceType,
} from '../../runtime/resources';
import type { KubeObject, ObjectClient } from '../../runtime/types';
import {
  defaultTokenSecretName,
  exporterPod,
  exportOwnerRef,
  exportPodName,
  exportService,
  exportServiceName,
  ownedSecret,
} from './exporter-pod';
import { externalLink, internalHost, internalLink, manifestConfigMap } from './links';
import { resolveSource, type SourceCondition, type SourceListers, type SourceState } from './sources';
import { VirtualMachineExportType } from './types';

/** The export kind's default TTL (upstream's DefaultDurationTTL). */
export const DEFAULT_TTL_MS = 2 * 3_600_000;
const REQUEUE_MS = 3000;

/** Signs the exporter's serving certificates with the install's CA. */
export interface ExportCertIssuer {
  /** The CA bundle clients verify the servers with (the links' `cert`). */
  caBundle(): Promise<string>;
  /** A serving pair for these DNS names. */
  issue(commonName: string, dnsNames: string[]): Promise<{ cert: string; key: string }>;
  /** How long an issued certificate lasts, and how long before its end the server is replaced. */
  durationMs: number;
  renewBeforeMs: number;
}

export interface ExportControllerDeps extends SourceListers {
  client: ObjectClient;
  recorder: EventRecorder;
  exports: Lister<VirtualMachineExport>;
  /** The exporter pods (label kubevirt.io=virt-exporter). */
  exporterPods: Lister<Pod>;
  certs: ExportCertIssuer;
  /**
   * The export proxy's external host and the certificate presented for it (an Ingress in
   * the install namespace, external-link.ts); undefined: none (local mode watches none).
   */
  external?: () => Promise<{ host: string; cert: string } | undefined>;
  image: string;
  imagePullPolicy?: string;
  now?: () => Date;
}

type K<T> = T & KubeObject;

/** An export's expiry time. */
export function expiration(e: VirtualMachineExport): Date {
  const created = new Date(String(e.metadata?.creationTimestamp ?? 0)).getTime();
  let ttl = DEFAULT_TTL_MS;
  if (e.spec.ttlDuration) ttl = parseDuration(String(e.spec.ttlDuration), 'spec.ttlDuration');
  return new Date(created + ttl);
}

const podReady = (p: Pod) =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/** Sets `c` in `list`, keeping the transition time when nothing changed. */
function setCondition(list: Condition[], c: SourceCondition, now: string): Condition[] {
  const old = list.find((x) => x.type === c.type);
  if (old && old.status === c.status && (old.reason ?? '') === c.reason && (old.message ?? '') === c.message)
    return list;
  const next: Condition = {
    type: c.type,
    status: c.status,
    reason: c.reason,
    message: c.message,
    lastTransitionTime: now,
  };
  return old ? list.map((x) => (x.type === c.type ? next : x)) : [...list, next];
}

export class VmExportController {
  /** Certificate Secrets made (or found made) by this process; a restart re-tries creating them. */
  private readonly certSecrets = new Set<string>();

  constructor(private readonly d: ExportControllerDeps) {}

  private now(): Date {
    return this.d.now?.() ?? new Date();
  }

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const e = this.d.exports.get(key);
    if (!e || e.metadata?.deletionTimestamp) return undefined;
    const nowIso = this.now().toISOString();
    const status: VirtualMachineExportStatus = structuredClone(e.status ?? {});
    status.conditions ??= [];
    const invalid = validateVirtualMachineExport(e, 'CREATE');
    if (invalid.length) {
      const msg = invalid.map((x) => `${x.path}: ${x.message}`).join('; ');
      status.phase = 'Pending';
      status.conditions = setCondition(
        status.conditions,
        { type: 'Ready', status: 'False', reason: 'InvalidSpec', message: msg },
        nowIso,
      );
      await this.writeStatus(e, status);
      return undefined;
    }
    const expires = expiration(e);
    const left = expires.getTime() - this.now().getTime();
    if (left <= 0) {
      await this.d.client
        .delete(VirtualMachineExportType, e.metadata?.name ?? '', { namespace: e.metadata?.namespace })
        .catch((err) => {
          if (!(err instanceof NotFoundError)) throw err;
        });
      return undefined;
    }
    status.ttlExpirationTime = expires.toISOString();
    const source = await resolveSource(e, this.d);
    for (const c of source.toCreate) await this.create(PersistentVolumeClaimType, c);
    // Made once (the status then names it): no create call on every pass.
    if (!e.status?.serviceName) {
      const service = exportService(e);
      await this.createOnce(
        ServiceType,
        service,
        e,
        'ServiceCreated',
        `Created service ${e.metadata?.namespace}/${service.metadata.name}`,
      );
    }
    const hasContent = source.volumes.length > 0;
    if (e.spec.tokenSecretRef) status.tokenSecretRef = e.spec.tokenSecretRef;
    else if (source.available && hasContent && !e.status?.tokenSecretRef) {
      status.tokenSecretRef = defaultTokenSecretName(e);
      const token = randomBytes(24).toString('base64url');
      const secret = ownedSecret(status.tokenSecretRef, e.metadata?.namespace, exportOwnerRef(e), { token });
      await this.createOnce(
        SecretType,
        secret,
        e,
        'SecretCreated',
        `Created default secret ${e.metadata?.namespace}/${status.tokenSecretRef}`,
      );
    }
    const pod = await this.managePod(e, source, status.tokenSecretRef, expires);
    this.fillStatus(status, e, source, pod, nowIso);
    if (pod && podReady(pod)) {
      const host = internalHost(exportServiceName(e), e.metadata?.namespace ?? '');
      status.links = { internal: internalLink(e, pod, host, await this.d.certs.caBundle()) };
      const external = await this.d.external?.();
      if (external) status.links.external = externalLink(e, pod, external.host, external.cert);
    }
    await this.writeStatus(e, status);
    return { requeueAfterMs: !source.available && hasContent ? Math.min(REQUEUE_MS, left) : left };
  }

  private fillStatus(
    s: VirtualMachineExportStatus,
    e: VirtualMachineExport,
    src: SourceState,
    pod: Pod | undefined,
    now: string,
  ) {
    s.serviceName = exportServiceName(e);
    s.links = {};
    let ready: SourceCondition = src.ready;
    s.phase = 'Pending';
    if (pod && podReady(pod)) {
      ready = { type: 'Ready', status: 'True', reason: 'PodReady', message: '' };
      s.phase = 'Ready';
    } else if (pod?.status?.phase === 'Succeeded') {
      ready = { type: 'Ready', status: 'False', reason: 'PodCompleted', message: '' };
      s.phase = 'Terminated';
    } else if (pod) {
      const pending = (pod.status?.phase ?? 'Pending') === 'Pending';
      ready = { type: 'Ready', status: 'False', reason: pending ? 'PodPending' : 'Unknown', message: '' };
    }
    s.conditions = setCondition(s.conditions ?? [], ready, now);
    if (src.extra) s.conditions = setCondition(s.conditions, src.extra, now);
    if (src.vmName) s.virtualMachineName = src.vmName;
    if (!src.volumes.length && !src.toCreate.length && e.spec.source.kind !== 'PersistentVolumeClaim')
      s.phase = 'Skipped';
  }

  /** The exporter pod after this pass (undefined: none runs). */
  private async managePod(
    e: VirtualMachineExport,
    src: SourceState,
    tokenSecret: string | undefined,
    expires: Date,
  ): Promise<Pod | undefined> {
    const ns = e.metadata?.namespace ?? '';
    let pod = this.d.exporterPods.get(`${ns}/${exportPodName(e)}`);
    if (pod?.metadata?.deletionTimestamp) return pod;
    if (pod && !src.available) {
      this.d.recorder.event(e, 'Warning', 'ExportPaused', src.ready.message);
      await this.deletePod(pod);
      return undefined;
    }
    if (pod && (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed')) {
      const msg = `Exporter pod ${ns}/${pod.metadata?.name} is in phase ${pod.status.phase}`;
      this.d.recorder.event(e, 'Warning', 'ExporterPodFailedOrCompleted', msg);
      await this.deletePod(pod);
      return pod;
    }
    if (!pod && src.available && src.volumes.length && tokenSecret) {
      const host = internalHost(exportServiceName(e), ns);
      if (src.vm) {
        const external = await this.d.external?.();
        const cm = manifestConfigMap(e, src.vm, src.volumes, host, await this.d.certs.caBundle(), external);
        await this.createOnce(
          ConfigMapType,
          cm,
          e,
          'DataManifestCreated',
          `Created exporter data manifest ${ns}/${cm.metadata.name}`,
        );
      }
      const { durationMs, renewBeforeMs } = this.d.certs;
      const rotate = this.now().getTime() + durationMs - renewBeforeMs;
      const manifest = exporterPod({
        export: e,
        volumes: src.volumes,
        image: this.d.image,
        imagePullPolicy: this.d.imagePullPolicy,
        tokenSecret,
        certSecret: `${exportPodName(e).slice(0, 50)}-${randomBytes(5).toString('hex')}`,
        deadline: new Date(Math.min(rotate, expires.getTime())).toISOString(),
        manifests: src.vm !== undefined,
      });
      try {
        pod = await this.d.client.create<K<Pod>>(PodType, manifest as K<Pod>);
        this.d.recorder.event(
          e,
          'Normal',
          'ExporterPodCreated',
          `Created exporter pod ${ns}/${manifest.metadata?.name}`,
        );
      } catch (err) {
        if (!(err instanceof AlreadyExistsError)) throw err;
        return undefined;
      }
    }
    if (pod && (pod.status?.phase ?? 'Pending') === 'Pending') await this.ensureCertSecret(e, pod);
    return pod;
  }

  /** The pod's TLS Secret (owned by the pod: a replaced pod gets a new one). */
  private async ensureCertSecret(e: VirtualMachineExport, pod: Pod): Promise<void> {
    const name = pod.spec?.volumes?.find((v) => v.name === 'certificates')?.secret?.secretName;
    // Issued once per pod (virt-controller may create Secrets, not read them).
    if (!name || this.certSecrets.has(name)) return;
    const svc = exportServiceName(e);
    const ns = e.metadata?.namespace ?? '';
    const pair = await this.d.certs.issue(internalHost(svc, ns), [
      svc,
      `${svc}.${ns}`,
      internalHost(svc, ns),
      `${internalHost(svc, ns)}.cluster.local`,
    ]);
    const secret = ownedSecret(
      name,
      ns,
      controllerRef('v1', 'Pod', pod),
      { 'tls.crt': pair.cert, 'tls.key': pair.key },
      'kubernetes.io/tls',
    );
    await this.createOnce(SecretType, secret, e, 'SecretCreated', 'Created exporter pod secret');
    this.certSecrets.add(name);
  }

  private async deletePod(pod: Pod): Promise<void> {
    await this.d.client
      .delete(PodType, pod.metadata?.name ?? '', { namespace: pod.metadata?.namespace })
      .catch((err) => {
        if (!(err instanceof NotFoundError)) throw err;
      });
  }

  private async create(type: typeof PodType, obj: object): Promise<boolean> {
    try {
      await this.d.client.create(type, obj as KubeObject);
      return true;
    } catch (err) {
      if (err instanceof AlreadyExistsError) return false;
      throw err;
    }
  }

  /** Creates `obj` unless it exists; records `reason` when it was made. */
  private async createOnce(
    type: typeof PodType,
    obj: object,
    e: VirtualMachineExport,
    reason: string,
    msg: string,
  ) {
    if (await this.create(type, obj)) this.d.recorder.event(e, 'Normal', reason, msg);
  }

  private async writeStatus(e: VirtualMachineExport, status: VirtualMachineExportStatus): Promise<void> {
    if (JSON.stringify(status) === JSON.stringify(e.status ?? {})) return;
    await this.d.client.updateStatus(VirtualMachineExportType, { ...(e as K<VirtualMachineExport>), status });
  }
}
