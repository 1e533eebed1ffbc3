/**
 * The objects of an upload into a PVC (CDI's upload controller's): the upload pod
 * `cdi-upload-<pvc>` (the launcher image, which has qemu-img, running `kubevirt-ts
 * cdi-uploadserver`; the claim at /data or as /dev/cdi-block-volume, scratch space, its
 * serving certificate and the client CA from a Secret of the same name), and a Service of
 * that name the upload proxy sends to. All are owned by the PVC, so they go with it.
 */
import { IMPORTER_BLOCK_DEVICE, IMPORTER_DATA_DIR, IMPORTER_SCRATCH_DIR } from '../common/cdi-import-request';
import { TERMINATION_LOG } from '../common/cdi-import-termination';
import {
  UPLOAD_CLIENT_NAME,
  UPLOAD_HEALTHZ_PATH,
  UPLOAD_SERVER_PORT,
  UploadServerEnv,
  uploadResourceName,
} from '../common/cdi-upload';
import { controllerRef } from '../common/owner-ref';
import type { Pod } from '../common/pod';
import { CdiLabels } from './annotations';
import type { ImporterPodOptions } from './importer-pod';

/** CDI's label of upload server pods, and the label its Service selects on. */
export const UPLOAD_SERVER_LABEL = 'cdi-upload-server';
export const UPLOAD_SERVICE_LABEL = 'service';
const CERT_DIR = '/etc/cdi-upload';

/** The PVC an upload goes to, as far as its objects need it. */
export interface UploadClaim {
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    annotations?: Record<string, string>;
  };
  spec?: { volumeMode?: string };
}

/** What the pod needs besides the claim. */
export interface UploadPodInput {
  claim: UploadClaim;
  /** Disk size in bytes the DataVolume asked for (none: the volume's usable size). */
  imageSizeBytes?: number;
  overhead: number;
  priorityClassName?: string;
  serviceAccountName?: string;
  /** When the server stops if idle (RFC 3339): before its certificate ends. */
  deadline?: string;
}

const owner = (claim: UploadClaim) => controllerRef('v1', 'PersistentVolumeClaim', claim);

/** The upload pod. */
export function uploadPod(input: UploadPodInput, o: ImporterPodOptions): Pod {
  const { claim } = input;
  const claimName = claim.metadata?.name ?? '';
  const name = uploadResourceName(claimName);
  const block = claim.spec?.volumeMode === 'Block';
  const env: Array<Record<string, unknown>> = [
    { name: UploadServerEnv.certFile, value: `${CERT_DIR}/tls.crt` },
    { name: UploadServerEnv.keyFile, value: `${CERT_DIR}/tls.key` },
    { name: UploadServerEnv.clientCertFile, value: `${CERT_DIR}/ca.crt` },
    { name: UploadServerEnv.clientName, value: UPLOAD_CLIENT_NAME },
    { name: UploadServerEnv.volumeMode, value: block ? 'Block' : 'Filesystem' },
    { name: UploadServerEnv.filesystemOverhead, value: String(input.overhead) },
    ...(input.imageSizeBytes
      ? [{ name: UploadServerEnv.imageSize, value: String(input.imageSizeBytes) }]
      : []),
    ...(input.deadline ? [{ name: UploadServerEnv.deadline, value: input.deadline }] : []),
  ];
  const mounts: Array<Record<string, unknown>> = [
    { name: 'cdi-scratch-vol', mountPath: IMPORTER_SCRATCH_DIR },
    { name: 'cdi-cert-vol', mountPath: CERT_DIR, readOnly: true },
  ];
  if (!block) mounts.push({ name: 'cdi-data-vol', mountPath: IMPORTER_DATA_DIR });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: claim.metadata?.namespace,
      labels: {
        [CdiLabels.app]: CdiLabels.appValue,
        [CdiLabels.component]: UPLOAD_SERVER_LABEL,
        [UPLOAD_SERVICE_LABEL]: name,
      },
      ownerReferences: [owner(claim)],
    },
    spec: {
      // A failed async upload ends the process; the restart waits for the next try (CDI's).
      restartPolicy: 'OnFailure',
      ...(input.priorityClassName ? { priorityClassName: input.priorityClassName } : {}),
      ...(input.serviceAccountName ? { serviceAccountName: input.serviceAccountName } : {}),
      automountServiceAccountToken: false,
      // As the importer: QEMU's user writes disk.img (fsGroup gives it the volume); a block
      // device is written as root (the kubelet does not hand devices to fsGroup).
      securityContext: block
        ? { runAsUser: 0 }
        : { runAsUser: 107, runAsGroup: 107, fsGroup: 107, runAsNonRoot: true },
      containers: [
        {
          name: UPLOAD_SERVER_LABEL,
          image: o.image,
          imagePullPolicy: o.imagePullPolicy ?? 'IfNotPresent',
          args: ['cdi-uploadserver'],
          env,
          ports: [{ name: 'upload', containerPort: UPLOAD_SERVER_PORT, protocol: 'TCP' }],
          readinessProbe: {
            httpGet: { scheme: 'HTTPS', path: UPLOAD_HEALTHZ_PATH, port: UPLOAD_SERVER_PORT },
            periodSeconds: 2,
          },
          volumeMounts: mounts,
          ...(block ? { volumeDevices: [{ name: 'cdi-data-vol', devicePath: IMPORTER_BLOCK_DEVICE }] } : {}),
          terminationMessagePath: TERMINATION_LOG,
          terminationMessagePolicy: 'FallbackToLogsOnError',
          resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '1Gi' } },
        } as never,
      ],
      volumes: [
        { name: 'cdi-data-vol', persistentVolumeClaim: { claimName } },
        { name: 'cdi-scratch-vol', emptyDir: {} },
        { name: 'cdi-cert-vol', secret: { secretName: name } },
      ],
    },
  };
}

/** The Service in front of the upload pod (443 to its 8443). */
export function uploadService(claim: UploadClaim) {
  const name = uploadResourceName(claim.metadata?.name ?? '');
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name,
      namespace: claim.metadata?.namespace,
      labels: { [CdiLabels.app]: CdiLabels.appValue, [CdiLabels.component]: UPLOAD_SERVER_LABEL },
      ownerReferences: [owner(claim)],
    },
    spec: {
      ports: [{ name: 'uploadserver', protocol: 'TCP', port: 443, targetPort: UPLOAD_SERVER_PORT }],
      selector: { [UPLOAD_SERVICE_LABEL]: name },
    },
  };
}

/** The DNS names of the Service (the serving certificate's names). */
export function uploadServiceNames(claim: UploadClaim): string[] {
  const name = uploadResourceName(claim.metadata?.name ?? '');
  const ns = claim.metadata?.namespace ?? '';
  return [name, `${name}.${ns}`, `${name}.${ns}.svc`, `${name}.${ns}.svc.cluster.local`];
}

/** The pod's certificate Secret: its serving pair and the CA the proxy's client certificate chains to. */
export function uploadCertSecret(claim: UploadClaim, pair: { cert: string; key: string }, clientCa: string) {
  const b = (v: string) => Buffer.from(v).toString('base64');
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: uploadResourceName(claim.metadata?.name ?? ''),
      namespace: claim.metadata?.namespace,
      ownerReferences: [owner(claim)],
    },
    type: 'kubernetes.io/tls',
    data: { 'tls.crt': b(pair.cert), 'tls.key': b(pair.key), 'ca.crt': b(clientCa) },
  };
}
