/**
 * The importer pod of a DataVolume (CDI's createImporterPod): the project's image running
 * `kubevirt-ts cdi-importer`, the claim mounted at /data (Filesystem) or handed over as
 * /dev/cdi-block-volume (Block), an emptyDir for the download, the http source's secret as
 * basic-auth variables and its certConfigMap at /certs. Owned by the PVC, as upstream, so
 * it goes with it.
 */
import type { DataVolume } from '../../api/generated/cdi/types';
import {
  IMPORTER_BLOCK_DEVICE,
  IMPORTER_CERT_DIR,
  IMPORTER_DATA_DIR,
  IMPORTER_SCRATCH_DIR,
  ImporterEnv,
} from '../common/cdi-import-request';
import { TERMINATION_LOG } from '../common/cdi-import-termination';
import { controllerRef } from '../common/owner-ref';
import type { Pod, PodVolume } from '../common/pod';
import { CdiLabels } from './annotations';

/** What the importer pod needs besides the DataVolume. */
export interface ImporterPodOptions {
  /** The project's image (it has qemu-img: the launcher image). */
  image: string;
  imagePullPolicy?: string;
}

/** CDI's importer pod name: `importer-<pvc>`, cut to a valid name. */
export function importerPodName(claimName: string): string {
  return `importer-${claimName}`.slice(0, 63).replace(/[-.]+$/, '');
}

export interface ImporterPodInput {
  dv: DataVolume;
  claim: { metadata?: { name?: string; uid?: string } };
  volumeMode: 'Filesystem' | 'Block';
  /** Disk size in bytes the DataVolume asked for. */
  imageSizeBytes: number;
  overhead: number;
}

/** Renders the importer pod. */
export function importerPod(input: ImporterPodInput, o: ImporterPodOptions): Pod {
  const { dv, claim } = input;
  const claimName = claim.metadata?.name ?? '';
  const source = dv.spec.source ?? {};
  const http = source.http;
  const env: Array<Record<string, unknown>> = [
    { name: ImporterEnv.source, value: http ? 'http' : 'blank' },
    { name: ImporterEnv.contentType, value: dv.spec.contentType || 'kubevirt' },
    { name: ImporterEnv.imageSize, value: String(input.imageSizeBytes) },
    { name: ImporterEnv.volumeMode, value: input.volumeMode },
    { name: ImporterEnv.filesystemOverhead, value: String(input.overhead) },
  ];
  const volumes: PodVolume[] = [
    { name: 'cdi-data-vol', persistentVolumeClaim: { claimName } },
    { name: 'cdi-scratch-vol', emptyDir: {} },
  ];
  const mounts: Array<Record<string, unknown>> = [
    { name: 'cdi-scratch-vol', mountPath: IMPORTER_SCRATCH_DIR },
  ];
  if (input.volumeMode === 'Filesystem') mounts.push({ name: 'cdi-data-vol', mountPath: IMPORTER_DATA_DIR });
  if (http) {
    env.push({ name: ImporterEnv.endpoint, value: http.url });
    if (http.checksum) env.push({ name: ImporterEnv.checksum, value: http.checksum });
    if (http.extraHeaders?.length)
      env.push({ name: ImporterEnv.extraHeaders, value: JSON.stringify(http.extraHeaders) });
    if (http.secretRef) {
      env.push(
        {
          name: ImporterEnv.accessKeyId,
          valueFrom: { secretKeyRef: { name: http.secretRef, key: 'accessKeyId' } },
        },
        {
          name: ImporterEnv.secretKey,
          valueFrom: { secretKeyRef: { name: http.secretRef, key: 'secretKey' } },
        },
      );
    }
    if (http.certConfigMap) {
      volumes.push({ name: 'cdi-cert-vol', configMap: { name: http.certConfigMap } });
      mounts.push({ name: 'cdi-cert-vol', mountPath: IMPORTER_CERT_DIR, readOnly: true });
      env.push({ name: ImporterEnv.certDir, value: IMPORTER_CERT_DIR });
    }
  }
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: importerPodName(claimName),
      namespace: dv.metadata?.namespace,
      labels: { [CdiLabels.app]: CdiLabels.appValue, [CdiLabels.component]: 'importer' },
      annotations: { [CdiLabels.createdForDataVolume]: dv.metadata?.uid ?? '' },
      ownerReferences: [controllerRef('v1', 'PersistentVolumeClaim', claim)],
    },
    spec: {
      // The DataVolume controller retries a failed import with a new pod (restartCount).
      restartPolicy: 'Never',
      ...(dv.spec.priorityClassName ? { priorityClassName: dv.spec.priorityClassName } : {}),
      ...(dv.spec.serviceAccountName ? { serviceAccountName: dv.spec.serviceAccountName } : {}),
      automountServiceAccountToken: false,
      // As CDI's importer: QEMU's user (107) writes disk.img, and fsGroup gives it the
      // filesystem volume. A block device is written as root (the kubelet does not hand
      // devices to fsGroup).
      securityContext:
        input.volumeMode === 'Filesystem'
          ? { runAsUser: 107, runAsGroup: 107, fsGroup: 107, runAsNonRoot: true }
          : { runAsUser: 0 },
      containers: [
        {
          name: 'importer',
          image: o.image,
          imagePullPolicy: o.imagePullPolicy ?? 'IfNotPresent',
          args: ['cdi-importer'],
          env,
          volumeMounts: mounts,
          ...(input.volumeMode === 'Block'
            ? { volumeDevices: [{ name: 'cdi-data-vol', devicePath: IMPORTER_BLOCK_DEVICE }] }
            : {}),
          terminationMessagePath: TERMINATION_LOG,
          // An importer that cannot write its message (or dies before) still says why: its log's tail.
          terminationMessagePolicy: 'FallbackToLogsOnError',
          resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '1Gi' } },
        } as never,
      ],
      volumes,
    },
  };
}
