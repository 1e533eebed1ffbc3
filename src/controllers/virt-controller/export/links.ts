/**
 * The export's `status.links` (upstream's links.go, getInteralLinks and getExternalLinks):
 * `internal`, the CA bundle the server's certificate chains to and URLs on the Service's
 * cluster DNS name (`https://virt-export-<name>.<ns>.svc/volumes/<claim>/disk.img` ...);
 * `external`, when an Ingress leads to the export proxy, the same paths under
 * `https://<host>/api/export.kubevirt.io/v1/namespaces/<ns>/virtualmachineexports/<name>`
 * with the Ingress's certificate. Both are read back from the pod's environment, so they
 * are what the server serves. And the manifest ConfigMap the server reads its
 * `manifests/all` from (upstream's createManifestConfigMap).
 */
import type {
  VirtualMachine,
  VirtualMachineExport,
  VirtualMachineExportLink,
} from '../../../api/generated/types';
import { ManifestKeys, serverPathsFromEnv } from '../../common/export-paths';
import type { Pod } from '../../common/pod';
import { exportOwnerRef, manifestConfigMapName } from './exporter-pod';
import { externalPath } from './external-link';
import type { SourceVolume } from './sources';

/** The Service's in-cluster host name. */
export const internalHost = (service: string, namespace: string) => `${service}.${namespace}.svc`;

/** Where a link points: its base (a host, and for external links the proxy's path) and its kind. */
export interface LinkBase {
  /** `host` or `host/api/export.kubevirt.io/...`: no scheme, no trailing slash. */
  hostAndBase: string;
  /** Manifest URLs carry it (`/internal/manifests/all`, `/external/manifests/all`), as upstream's. */
  kind: 'internal' | 'external';
  /** The PEM the client verifies the server with. */
  cert: string;
}

/** The link of a running exporter pod at `base`. */
export function exportLink(e: VirtualMachineExport, pod: Pod, base: LinkBase): VirtualMachineExportLink {
  const env = Object.fromEntries(
    ((pod.spec?.containers?.[0]?.env ?? []) as Array<{ name: string; value?: string }>)
      .filter((v) => v.value !== undefined)
      .map((v) => [v.name, v.value]),
  );
  const paths = serverPathsFromEnv(env);
  const url = (uri: string) => `https://${base.hostAndBase}${uri}`;
  // A VMSnapshot's restored claims are `<export>-<claim>`: the link names the claim (upstream's namer).
  const prefix = e.spec.source.kind === 'VirtualMachineSnapshot' ? `${e.metadata?.name}-` : '';
  const link: VirtualMachineExportLink = { cert: base.cert.trim(), volumes: [], manifests: [] };
  if (paths.vmUri) link.manifests!.push({ type: 'all', url: url(`/${base.kind}${paths.vmUri}`) });
  if (paths.secretUri)
    link.manifests!.push({ type: 'auth-header-secret', url: url(`/${base.kind}${paths.secretUri}`) });
  for (const v of paths.volumes) {
    const claim = (v.rawUri ?? v.archiveUri ?? '').split('/')[2];
    if (!claim) continue;
    const formats = [
      ...(v.rawUri ? [{ format: 'raw', url: url(v.rawUri) }] : []),
      ...(v.rawGzUri ? [{ format: 'gzip', url: url(v.rawGzUri) }] : []),
      ...(v.dirUri ? [{ format: 'dir', url: url(v.dirUri) }] : []),
      ...(v.archiveUri ? [{ format: 'tar.gz', url: url(v.archiveUri) }] : []),
    ];
    link.volumes!.push({ name: claim.startsWith(prefix) ? claim.slice(prefix.length) : claim, formats });
  }
  if (!link.manifests!.length) delete link.manifests;
  return link;
}

/** The internal link of a running exporter pod. */
export function internalLink(
  e: VirtualMachineExport,
  pod: Pod,
  host: string,
  caBundle: string,
): VirtualMachineExportLink {
  return exportLink(e, pod, { hostAndBase: host, kind: 'internal', cert: caBundle });
}

/** The external base of an export behind the proxy at `host` (upstream's path.Join of the two). */
export const externalBase = (e: VirtualMachineExport, host: string) =>
  `${host.replace(/\/+$/, '')}${externalPath(e.metadata?.namespace ?? '', e.metadata?.name ?? '')}`;

/** The external link of a running exporter pod behind the proxy at `host`, with the Ingress's `cert`. */
export function externalLink(
  e: VirtualMachineExport,
  pod: Pod,
  host: string,
  cert: string,
): VirtualMachineExportLink {
  return exportLink(e, pod, { hostAndBase: externalBase(e, host), kind: 'external', cert });
}

/** The VM as the manifest serves it: name, namespace, labels, annotations and spec only. */
function cleanVm(vm: VirtualMachine): VirtualMachine {
  const m = vm.metadata ?? {};
  return {
    metadata: {
      name: m.name,
      namespace: m.namespace,
      ...(m.labels ? { labels: m.labels } : {}),
      ...(m.annotations ? { annotations: m.annotations } : {}),
    },
    spec: vm.spec,
  };
}

/** The manifest ConfigMap of a VM export. */
export function manifestConfigMap(
  e: VirtualMachineExport,
  vm: VirtualMachine,
  volumes: SourceVolume[],
  host: string,
  caBundle: string,
  external?: { host: string; cert: string },
) {
  const data: Record<string, string> = {
    [ManifestKeys.vm]: JSON.stringify(cleanVm(vm)),
    [ManifestKeys.exportName]: e.metadata?.name ?? '',
    [ManifestKeys.internalHost]: host,
    [ManifestKeys.internalCa]: JSON.stringify({
      metadata: { name: `export-ca-cm-${e.metadata?.name}` },
      data: { 'ca.pem': caBundle.trim() },
    }),
  };
  // Known when the pod is made: `/external/manifests/all` then points at the proxy (upstream's).
  if (external) {
    data[ManifestKeys.externalHost] = externalBase(e, external.host);
    data[ManifestKeys.externalCa] = JSON.stringify({
      metadata: { name: `export-ca-cm-${e.metadata?.name}` },
      data: { 'ca.pem': external.cert.trim() },
    });
  }
  const templated = new Set((vm.spec.dataVolumeTemplates ?? []).map((t) => t.metadata?.name));
  // Claims that are not the VM's own templates get a DataVolume importing them (upstream's).
  for (const { claim } of volumes) {
    const name = claim.metadata?.name ?? '';
    const vmClaim =
      e.spec.source.kind === 'VirtualMachineSnapshot' ? name.slice(`${e.metadata?.name}-`.length) : name;
    if (templated.has(vmClaim)) continue;
    data[`dv-${name}`] = JSON.stringify({
      metadata: { name: vmClaim, namespace: e.metadata?.namespace },
      spec: {
        source: { http: { url: '' } },
        storage: {
          ...(claim.spec?.accessModes ? { accessModes: claim.spec.accessModes } : {}),
          ...(claim.spec?.volumeMode ? { volumeMode: claim.spec.volumeMode } : {}),
          ...(claim.spec?.resources ? { resources: claim.spec.resources } : {}),
        },
      },
    });
  }
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: manifestConfigMapName(e),
      namespace: e.metadata?.namespace,
      ownerReferences: [exportOwnerRef(e)],
    },
    data,
  };
}
