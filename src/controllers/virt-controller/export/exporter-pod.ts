/**
 * The objects a VirtualMachineExport owns, as upstream's export controller and
 * RenderExporterManifest make them: the exporter pod `virt-export-<name>` (the launcher's
 * image running `kubevirt-ts virt-exportserver`, as QEMU's user, every claim mounted
 * read-only, its certificate and token Secrets mounted, an HTTPS readiness probe), the
 * Service `virt-export-<name>` (443 to the pod's 8443) and the manifest ConfigMap.
 */
import type { VirtualMachineExport } from '../../../api/generated/types';
import {
  BLOCK_DEVICE_DIR,
  EXPORT_READY_PATH,
  EXPORT_SERVER_PORT,
  type ExportVolumePaths,
  FILESYSTEM_MOUNT_DIR,
  MANIFEST_DATA_DIR,
  MANIFESTS_ALL_URI,
  MANIFESTS_SECRET_URI,
  volumeEnv,
  volumeUris,
} from '../../common/export-paths';
import { controllerRef } from '../../common/owner-ref';
import type { Pod, PodVolume } from '../../common/pod';
import type { SourceVolume } from './sources';

/** Label of the exporter pods (upstream's `kubevirt.io: virt-exporter`). */
export const EXPORTER_APP_LABEL = 'kubevirt.io';
export const EXPORTER_APP = 'virt-exporter';
/** The Service selects its pod by this label (upstream's). */
export const EXPORT_SERVICE_LABEL = 'kubevirt.io.virt-export-service';
const TOKEN_DIR = '/token';
const CERT_DIR = '/cert';

/** upstream naming.GetName: `<prefix>-<name>`, cut and hashed beyond 63 characters. */
export function joinName(prefix: string, name: string, max = 63): string {
  const n = `${prefix}-${name}`;
  if (n.length <= max) return n;
  let h = 0x811c9dc5;
  for (const c of n) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193) >>> 0;
  const hash = h.toString(16).padStart(8, '0');
  return `${n.slice(0, max - hash.length - 1)}-${hash}`;
}

/** The exporter pod's name. */
export const exportPodName = (e: VirtualMachineExport) => joinName('virt-export', e.metadata?.name ?? '');
/** The Service's name (dots are not allowed in a DNS-1035 label). */
export const exportServiceName = (e: VirtualMachineExport) =>
  joinName('virt-export', (e.metadata?.name ?? '').replaceAll('.', '-'));
/** The generated token Secret's name (upstream's). */
export const defaultTokenSecretName = (e: VirtualMachineExport) =>
  joinName('export-token', e.metadata?.name ?? '');
/** The manifest ConfigMap's name (upstream's). */
export const manifestConfigMapName = (e: VirtualMachineExport) => `exporter-vm-manifest-${e.metadata?.name}`;
/** The value of the Service's selector label. */
export const exportLabelValue = (e: VirtualMachineExport) =>
  (e.metadata?.name ?? '').length <= 63
    ? (e.metadata?.name ?? '')
    : joinName('virt-export', e.metadata?.name ?? '');
/** A claim's volume name in the pod (upstream's getExportPodVolumeNameFromStr). */
export const podVolumeName = (claim: string) => {
  const n = claim.replaceAll('.', '-');
  return n.length <= 63 ? n : joinName('virt-export', n);
};

const owner = (e: VirtualMachineExport) => controllerRef('export.kubevirt.io/v1', 'VirtualMachineExport', e);

/** Where each volume is mounted and the URIs it is served at. */
export function volumePaths(volumes: SourceVolume[]): ExportVolumePaths[] {
  return volumes.map(({ claim, diskImage }) => {
    const name = claim.metadata?.name ?? '';
    const dir = claim.spec?.volumeMode === 'Block' ? BLOCK_DEVICE_DIR : FILESYSTEM_MOUNT_DIR;
    return { path: `${dir}/${podVolumeName(name)}`, ...volumeUris(name, diskImage) };
  });
}

/** What the pod is rendered from. */
export interface ExporterPodInput {
  export: VirtualMachineExport;
  volumes: SourceVolume[];
  image: string;
  imagePullPolicy?: string;
  tokenSecret: string;
  certSecret: string;
  /** When the server stops (RFC 3339). */
  deadline: string;
  /** Serve the VM's manifests (VM and VMSnapshot sources). */
  manifests: boolean;
}

/** The exporter pod. */
export function exporterPod(i: ExporterPodInput): Pod {
  const e = i.export;
  const paths = volumePaths(i.volumes);
  const env: Array<Record<string, unknown>> = [
    { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'CERT_FILE', value: `${CERT_DIR}/tls.crt` },
    { name: 'KEY_FILE', value: `${CERT_DIR}/tls.key` },
    { name: 'TOKEN_FILE', value: `${TOKEN_DIR}/token` },
    { name: 'DEADLINE', value: i.deadline },
    { name: 'EXPORT_SECRET_DEF_URI', value: MANIFESTS_SECRET_URI },
  ];
  if (i.manifests) env.push({ name: 'EXPORT_VM_DEF_URI', value: MANIFESTS_ALL_URI });
  const volumes: PodVolume[] = [
    { name: 'certificates', secret: { secretName: i.certSecret } },
    { name: 'token', secret: { secretName: i.tokenSecret } },
  ];
  const mounts: Array<Record<string, unknown>> = [
    { name: 'certificates', mountPath: CERT_DIR, readOnly: true },
    { name: 'token', mountPath: TOKEN_DIR, readOnly: true },
  ];
  const devices: Array<Record<string, unknown>> = [];
  i.volumes.forEach(({ claim }, n) => {
    const name = podVolumeName(claim.metadata?.name ?? '');
    const p = paths[n]!;
    volumes.push({ name, persistentVolumeClaim: { claimName: claim.metadata?.name ?? '', readOnly: true } });
    if (claim.spec?.volumeMode === 'Block') devices.push({ name, devicePath: p.path });
    else mounts.push({ name, mountPath: p.path, readOnly: true });
    env.push(...volumeEnv(n, p));
  });
  if (i.manifests) {
    volumes.push({ name: 'manifest-data', configMap: { name: manifestConfigMapName(e) } });
    mounts.push({ name: 'manifest-data', mountPath: MANIFEST_DATA_DIR, readOnly: true });
  }
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: exportPodName(e),
      namespace: e.metadata?.namespace,
      labels: {
        ...(e.metadata?.labels ?? {}),
        [EXPORTER_APP_LABEL]: EXPORTER_APP,
        [EXPORT_SERVICE_LABEL]: exportLabelValue(e),
      },
      ...(e.metadata?.annotations ? { annotations: { ...e.metadata.annotations } } : {}),
      ownerReferences: [owner(e)],
    },
    spec: {
      restartPolicy: 'Never',
      automountServiceAccountToken: false,
      // QEMU's user owns the disks (the launcher's and the importer's); fsGroup gives it the rest.
      securityContext: {
        runAsNonRoot: true,
        runAsUser: 107,
        runAsGroup: 107,
        fsGroup: 107,
        seccompProfile: { type: 'RuntimeDefault' },
      },
      containers: [
        {
          name: 'exporter',
          image: i.image,
          imagePullPolicy: i.imagePullPolicy ?? 'IfNotPresent',
          args: ['virt-exportserver'],
          env,
          volumeMounts: mounts,
          ...(devices.length ? { volumeDevices: devices } : {}),
          ports: [{ name: 'export', containerPort: EXPORT_SERVER_PORT, protocol: 'TCP' }],
          readinessProbe: {
            httpGet: { scheme: 'HTTPS', path: EXPORT_READY_PATH, port: EXPORT_SERVER_PORT },
            periodSeconds: 2,
          },
          securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { memory: '1Gi' } },
        } as never,
      ],
      volumes,
    },
  };
}

/** The Service in front of the pod. */
export function exportService(e: VirtualMachineExport) {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: exportServiceName(e),
      namespace: e.metadata?.namespace,
      labels: { ...(e.metadata?.labels ?? {}), [EXPORTER_APP_LABEL]: EXPORTER_APP },
      ownerReferences: [owner(e)],
    },
    spec: {
      ports: [{ name: 'export', protocol: 'TCP', port: 443, targetPort: EXPORT_SERVER_PORT }],
      selector: { [EXPORT_SERVICE_LABEL]: exportLabelValue(e) },
    },
  };
}

/** A Secret owned by the export (the generated token) or by the pod (its certificate). */
export function ownedSecret(
  name: string,
  namespace: string | undefined,
  ownerRef: ReturnType<typeof controllerRef>,
  data: Record<string, string>,
  type = 'Opaque',
) {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace, ownerReferences: [ownerRef] },
    type,
    data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  };
}

export { owner as exportOwnerRef };
