/**
 * The importer pod of a DataVolume (CDI's createImporterPod): the project's image running
 * `kubevirt-ts cdi-importer`, the claim mounted at /data (Filesystem) or handed over as
 * /dev/cdi-block-volume (Block), an emptyDir for the download, the http source's secret as
 * basic-auth variables and its certConfigMap at /certs; a registry source's image as an
 * init container. Owned by the PVC, as upstream, so
 * it goes with it.
 */
import { registryImage } from '../../api/cdi/validate-datavolume';
import type { DataVolume } from '../../api/generated/cdi/types';
import {
  IMPORTER_BLOCK_DEVICE,
  IMPORTER_CERT_DIR,
  IMPORTER_DATA_DIR,
  IMPORTER_EXTRA_HEADERS_DIR,
  IMPORTER_SCRATCH_DIR,
  ImporterEnv,
  REGISTRY_IMAGE_FILE,
} from '../common/cdi-import-request';
import { TERMINATION_LOG } from '../common/cdi-import-termination';
import { controllerRef } from '../common/owner-ref';
import type { Pod, PodVolume } from '../common/pod';
import { CdiLabels } from './annotations';

/** Where the first init container puts busybox for the image's own container. */
const BIN_DIR = '/cdi-bin';

/**
 * The copy a registry import's second init container runs (busybox sh, $0 the image
 * reference for messages): the one file under the image's /disk/ (KubeVirt's containerDisk
 * layout) into scratch, renamed into place when whole. An image without exactly one such
 * file is a fatal error (a retry pulls the same image); a failed copy is retried.
 */
export const REGISTRY_COPY_SCRIPT = [
  `set -- /disk/*`,
  `if [ $# -ne 1 ] || [ ! -f "$1" ]; then echo '{"message":"the registry image must hold exactly one disk image file under /disk/ (a containerDisk)","fatal":true}' > ${TERMINATION_LOG}; exit 2; fi`,
  `${BIN_DIR}/busybox cp -- "$1" ${IMPORTER_SCRATCH_DIR}/${REGISTRY_IMAGE_FILE}.tmp`,
  `${BIN_DIR}/busybox mv -- ${IMPORTER_SCRATCH_DIR}/${REGISTRY_IMAGE_FILE}.tmp ${IMPORTER_SCRATCH_DIR}/${REGISTRY_IMAGE_FILE}`,
].join(' && ');

/**
 * CDI's registry import with `pullMethod: node`: the containerDisk image runs in the
 * importer pod, so the node's container runtime provides it and no registry client is
 * needed. Upstream's image container serves its disk over HTTP on localhost to the
 * importer; here, with the importer after it, it copies the disk into scratch as an init
 * container. The image has no userland: the first init container puts the project's
 * static busybox on a shared emptyDir, as the launcher's containerDisk containers do.
 */
function registryInitContainers(url: string, o: ImporterPodOptions): Array<Record<string, unknown>> {
  const bin = { name: 'cdi-bin-vol', mountPath: BIN_DIR };
  const resources = { requests: { cpu: '10m', memory: '40Mi' }, limits: { memory: '256Mi' } };
  return [
    {
      name: 'init',
      image: o.image,
      imagePullPolicy: o.imagePullPolicy ?? 'IfNotPresent',
      command: ['cp', '/bin/busybox', `${BIN_DIR}/busybox`],
      volumeMounts: [bin],
      resources,
      terminationMessagePolicy: 'FallbackToLogsOnError',
    },
    {
      name: 'registry',
      image: registryImage(url),
      // The node's image store first: pullMethod node is "use what the node has or pulls".
      imagePullPolicy: 'IfNotPresent',
      command: [`${BIN_DIR}/busybox`, 'sh', '-c', REGISTRY_COPY_SCRIPT],
      volumeMounts: [bin, { name: 'cdi-scratch-vol', mountPath: IMPORTER_SCRATCH_DIR }],
      resources,
      terminationMessagePath: TERMINATION_LOG,
      terminationMessagePolicy: 'FallbackToLogsOnError',
    },
  ];
}

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
  const registry = source.registry;
  const env: Array<Record<string, unknown>> = [
    { name: ImporterEnv.source, value: http ? 'http' : registry ? 'registry' : 'blank' },
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
    // CDI's layout: each Secret at /extraheaders/secret<i>, every file in it a header line.
    for (const [i, secretName] of (http.secretExtraHeaders ?? []).entries()) {
      volumes.push({ name: `cdi-extra-headers-vol-${i}`, secret: { secretName } });
      mounts.push({
        name: `cdi-extra-headers-vol-${i}`,
        mountPath: `${IMPORTER_EXTRA_HEADERS_DIR}/secret${i}`,
        readOnly: true,
      });
    }
    if (http.secretExtraHeaders?.length)
      env.push({ name: ImporterEnv.secretHeadersDir, value: IMPORTER_EXTRA_HEADERS_DIR });
    if (http.certConfigMap) {
      volumes.push({ name: 'cdi-cert-vol', configMap: { name: http.certConfigMap } });
      mounts.push({ name: 'cdi-cert-vol', mountPath: IMPORTER_CERT_DIR, readOnly: true });
      env.push({ name: ImporterEnv.certDir, value: IMPORTER_CERT_DIR });
    }
  }
  let initContainers: Array<Record<string, unknown>> | undefined;
  if (registry?.url) {
    env.push({ name: ImporterEnv.endpoint, value: registry.url });
    volumes.push({ name: 'cdi-bin-vol', emptyDir: {} });
    initContainers = registryInitContainers(registry.url, o);
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
      ...(initContainers ? { initContainers: initContainers as never } : {}),
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
