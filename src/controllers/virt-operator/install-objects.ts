/**
 * The objects one KubeVirt CR asks for: the component renderers of `components/` (the
 * same that write manifests/, so the operator and the manifests cannot disagree) for
 * the CRDs, aggregated roles, virt-controller, virt-handler and virt-api; the
 * certificate Secrets and the CA bundle ConfigMap; pull policy, dev-cluster fields
 * (overlays.ts) and node placement laid over; each
 * stamped with the operator's label and install-strategy annotations. The namespace
 * and the KubeVirt CRD are the operator manifest's and are left out. The VolumeSnapshot
 * CRDs are the cluster's (the CSI snapshot stack's): marked to be created only where
 * absent, never updated or deleted (bookkeeping.ts).
 */
import type { KubeObject } from '../runtime/types';
import { INSTALL_NAMESPACE_LABEL, type InstallStrategy, markCreatedIfAbsent, stamp } from './bookkeeping';
import { CA_BUNDLE_KEY, CA_NAME, type CertPlan, HANDLER_SERVER_CERTS } from './cert-rotation';
import { defaultInstallOptions, renderInstall } from './components/index';
import { isSnapshotCrd } from './components/storage';
import { virtApiComponents } from './components/virt-api';
import type { InstallSpec } from './kubevirt-spec';
import { withInstallOverlays } from './overlays';
import { withPlacement } from './placement';

/** The operator's part of the rendering. */
export interface RenderContext {
  namespace: string;
  crdsDir: string;
  /** The project's dev cluster (no kube-proxy): see InstallOptions.devCluster. */
  devCluster?: { apiServerPort: number };
  /** The kubelet's --root-dir (default /var/lib/kubelet): virt-handler reads its pods directory. */
  kubeletRootDir?: string;
  /** The CSI pool's place and size on the nodes. */
  storage?: { csiPoolDir?: string; csiPoolSize?: string };
  generation: number;
}

/** The CRD the operator manifest installs (deleting it would delete the CR itself). */
export const KUBEVIRT_CRD = 'kubevirts.kubevirt.io';

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** The Secrets and the CA bundle ConfigMap holding a certificate plan (also the plain install's, cert-keeper.ts). */
export function certObjects(ns: string, plan: CertPlan): KubeObject[] {
  const { ca, bundle, leaves } = plan.state;
  const secret = (name: string, data: Record<string, string>): KubeObject =>
    ({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name, namespace: ns, labels: { 'kubevirt.io': 'certificate' } },
      type: 'kubernetes.io/tls',
      data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, b64(v)])),
    }) as KubeObject;
  return [
    secret(CA_NAME, { 'tls.crt': ca.cert, 'tls.key': ca.key }),
    ...Object.entries(leaves).map(([name, p]) =>
      secret(name, { 'tls.crt': p.cert, 'tls.key': p.key, 'ca.crt': bundle }),
    ),
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: CA_NAME, namespace: ns, labels: { 'kubevirt.io': 'certificate' } },
      data: { [CA_BUNDLE_KEY]: bundle },
    } as KubeObject,
  ];
}

/** An object outside the install's namespace gets the install's namespace as a label (apply.ts lists by it). */
function markForeign(obj: KubeObject, namespace: string): KubeObject {
  const ns = obj.metadata?.namespace;
  if (!ns || ns === namespace) return obj;
  return {
    ...obj,
    metadata: { ...obj.metadata, labels: { ...obj.metadata?.labels, [INSTALL_NAMESPACE_LABEL]: namespace } },
  };
}

/** Every desired object, stamped. */
export function renderInstallObjects(ctx: RenderContext, spec: InstallSpec, certs: CertPlan): KubeObject[] {
  const registry = spec.registry.replace(/\/$/, '');
  const image = `${registry}/kubevirt-ts:${spec.tag}`;
  const o = defaultInstallOptions({
    namespace: ctx.namespace,
    image,
    launcherImage: `${registry}/virt-launcher:${spec.tag}`,
    imagePullPolicy: spec.pullPolicy,
    ...(spec.infra?.replicas !== undefined ? { controllerReplicas: spec.infra.replicas } : {}),
    ...(ctx.devCluster ? { devCluster: ctx.devCluster } : {}),
    ...(ctx.kubeletRootDir ? { kubeletRootDir: ctx.kubeletRootDir } : {}),
    ...(ctx.storage?.csiPoolDir ? { csiPoolDir: ctx.storage.csiPoolDir } : {}),
    ...(ctx.storage?.csiPoolSize ? { csiPoolSize: ctx.storage.csiPoolSize } : {}),
    handlerServerCerts: HANDLER_SERVER_CERTS,
    ...(spec.maxDevices !== undefined ? { handlerMaxDevices: spec.maxDevices } : {}),
  });
  const files = renderInstall(o, ctx.crdsDir);
  const objects: KubeObject[] = [];
  for (const [file, objs] of Object.entries(files)) {
    if (file.startsWith('00-namespace')) continue;
    for (const obj of objs)
      if (!(obj.kind === 'CustomResourceDefinition' && obj.metadata?.name === KUBEVIRT_CRD))
        objects.push(isSnapshotCrd(obj) ? markCreatedIfAbsent(obj) : obj);
  }
  objects.push(
    ...(virtApiComponents({
      namespace: ctx.namespace,
      image,
      caBundle: certs.state.bundle,
      replicas: spec.infra?.replicas,
      // On the host network (dev cluster) two virt-api pods cannot share a node's port.
      ...(ctx.devCluster ? { replicas: spec.infra?.replicas ?? 1, exclusivePort: true } : {}),
    }) as KubeObject[]),
  );
  objects.push(...certObjects(ctx.namespace, certs));
  const s: InstallStrategy = { version: spec.tag, registry, generation: ctx.generation };
  return objects.map((obj) =>
    stamp(
      withPlacement(withInstallOverlays(markForeign(obj, ctx.namespace), o), spec.infra, spec.workloads),
      s,
    ),
  );
}
