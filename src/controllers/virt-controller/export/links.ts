/**
 * The export's `status.links.internal` (upstream's links.go, getInteralLinks): the CA
 * bundle the server's certificate chains to, and URLs on the Service's cluster DNS name
 * (`https://virt-export-<name>.<ns>.svc/volumes/<claim>/disk.img` ...), read back from the
 * pod's environment so they are what the server serves; and the manifest ConfigMap the
 * server reads its `manifests/all` from (upstream's createManifestConfigMap).
 */
import type {
  VirtualMachine,
  VirtualMachineExport,
  VirtualMachineExportLink,
} from '../../../api/generated/types';
import { ManifestKeys, serverPathsFromEnv } from '../../common/export-paths';
import type { Pod } from '../../common/pod';
import { exportOwnerRef, manifestConfigMapName } from './exporter-pod';
import type { SourceVolume } from './sources';

/** The Service's in-cluster host name. */
export const internalHost = (service: string, namespace: string) => `${service}.${namespace}.svc`;

/** The internal link of a running exporter pod. */
export function internalLink(
  e: VirtualMachineExport,
  pod: Pod,
  host: string,
  caBundle: string,
): VirtualMachineExportLink {
  const env = Object.fromEntries(
    ((pod.spec?.containers?.[0]?.env ?? []) as Array<{ name: string; value?: string }>)
      .filter((v) => v.value !== undefined)
      .map((v) => [v.name, v.value]),
  );
  const paths = serverPathsFromEnv(env);
  const url = (uri: string) => `https://${host}${uri}`;
  // A VMSnapshot's restored claims are `<export>-<claim>`: the link names the claim (upstream's namer).
  const prefix = e.spec.source.kind === 'VirtualMachineSnapshot' ? `${e.metadata?.name}-` : '';
  const link: VirtualMachineExportLink = { cert: caBundle.trim(), volumes: [], manifests: [] };
  if (paths.vmUri) link.manifests!.push({ type: 'all', url: url(`/internal${paths.vmUri}`) });
  if (paths.secretUri)
    link.manifests!.push({ type: 'auth-header-secret', url: url(`/internal${paths.secretUri}`) });
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
