/**
 * What an install of kubevirt-ts is rendered for: namespace, images, and whether the
 * cluster is the project's own one-node dev cluster (no kube-proxy, so components use
 * the host network and reach the API server on 127.0.0.1). One source for every
 * component's objects (this folder), for `scripts/gen-manifests.ts` and the operator.
 */

/** Options every component renderer takes. */
export interface InstallOptions {
  /** Namespace of the components (default `kubevirt`). */
  namespace: string;
  /** The components image: `kubevirt-ts` with virt-controller, virt-handler, ... */
  image: string;
  /** The virt-launcher image launcher pods run. */
  launcherImage: string;
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  /** virt-controller replicas (default 2, one leads). */
  controllerReplicas: number;
  /** The kubelet's --root-dir (default /var/lib/kubelet): virt-handler reads `<it>/pods`. */
  kubeletRootDir: string;
  /**
   * The dev cluster (`npm run cluster`): no kube-proxy, so components run with
   * `hostNetwork: true` and `KUBERNETES_SERVICE_HOST=127.0.0.1` / `KUBERNETES_SERVICE_PORT`
   * set to this port; images are never pulled. Off by default.
   */
  devCluster?: { apiServerPort: number };
  /**
   * A Secret with virt-handler's serving pair and the CA bundle (`tls.crt`, `tls.key`,
   * `ca.crt`): the handler then serves the REST API virt-api calls (console, VNC, ...)
   * over mutual TLS on its port 8186. The operator sets it (it makes the Secret); the
   * plain manifests have no certificates, so their handler serves no REST API, and its
   * metrics server a self-signed pair until upstream's Secret of that name exists.
   */
  handlerServerCerts?: string;
  /**
   * The CSI driver's pool on each node: its mount point (the XFS image beside it as
   * `<dir>.img`). Default `<kubeletRootDir>/plugins/csi.kubevirt-ts.io/pool`; elsewhere,
   * its parent directory must be on a shared mount (the pod mounts it Bidirectional).
   */
  csiPoolDir?: string;
  /** The pool image's size when a node makes it (sparse; default 50Gi). */
  csiPoolSize: string;
  /**
   * virt-handler's `--max-devices`: how many of each shared device a node offers, the most
   * VMIs it runs (the KubeVirt CR's `configuration.virtualMachineInstancesPerNode`).
   * Unset: the handler's default, 1000.
   */
  handlerMaxDevices?: number;
  /** snapshot-controller replicas (default 2, one leads). */
  snapshotControllerReplicas: number;
}

/** The default install: namespace kubevirt, the project's images tagged latest. */
export function defaultInstallOptions(o: Partial<InstallOptions> = {}): InstallOptions {
  const dev = o.devCluster;
  return {
    namespace: 'kubevirt',
    image: 'localhost/kubevirt-ts/kubevirt-ts:latest',
    launcherImage: 'localhost/kubevirt-ts/virt-launcher:latest',
    imagePullPolicy: dev ? 'Never' : 'IfNotPresent',
    controllerReplicas: 2,
    kubeletRootDir: '/var/lib/kubelet',
    csiPoolSize: '50Gi',
    // One on the dev cluster's one node (host network: two would only wait for the lease).
    snapshotControllerReplicas: dev ? 1 : 2,
    ...o,
  };
}

const LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const IMAGE = /^[A-Za-z0-9][A-Za-z0-9._\-/:@]{0,254}$/;

const plainPath = (p: string) => /^\/[A-Za-z0-9._/-]*$/.test(p) && !p.split('/').includes('..');

/** Rejects options that would not make valid objects, naming the field. */
export function checkInstallOptions(o: InstallOptions): void {
  if (!LABEL.test(o.namespace))
    throw new Error(`install: namespace ${JSON.stringify(o.namespace)} is not a DNS-1123 label`);
  if (!IMAGE.test(o.image))
    throw new Error(`install: image ${JSON.stringify(o.image)} is not an image reference`);
  if (!IMAGE.test(o.launcherImage))
    throw new Error(`install: launcherImage ${JSON.stringify(o.launcherImage)} is not an image reference`);
  if (!Number.isInteger(o.controllerReplicas) || o.controllerReplicas < 1)
    throw new Error(`install: controllerReplicas ${o.controllerReplicas} is not a whole number >= 1`);
  if (!plainPath(o.kubeletRootDir))
    throw new Error(
      `install: kubeletRootDir ${JSON.stringify(o.kubeletRootDir)} is not a plain absolute path`,
    );
  if (
    o.csiPoolDir !== undefined &&
    (!plainPath(o.csiPoolDir) || o.csiPoolDir.split('/').filter(Boolean).length < 2)
  )
    throw new Error(
      `install: csiPoolDir ${JSON.stringify(o.csiPoolDir)} is not a plain absolute path below a directory (e.g. /var/lib/kubevirt-ts/csi/pool)`,
    );
  if (!/^[1-9][0-9]*(Mi|Gi|Ti)$/.test(o.csiPoolSize))
    throw new Error(
      `install: csiPoolSize ${JSON.stringify(o.csiPoolSize)} is not a size in Mi, Gi or Ti (e.g. 50Gi)`,
    );
  if (!Number.isInteger(o.snapshotControllerReplicas) || o.snapshotControllerReplicas < 1)
    throw new Error(
      `install: snapshotControllerReplicas ${o.snapshotControllerReplicas} is not a whole number >= 1`,
    );
  const port = o.devCluster?.apiServerPort;
  if (port !== undefined && (!Number.isInteger(port) || port < 1 || port > 65535))
    throw new Error(`install: devCluster.apiServerPort ${port} is not a port`);
}

/** Labels every install object carries (upstream's). */
export function componentLabels(component: string): Record<string, string> {
  return {
    'app.kubernetes.io/managed-by': 'kubevirt-ts',
    'app.kubernetes.io/component': 'kubevirt',
    'kubevirt.io': component,
  };
}

/** Pod-spec fields for the dev cluster's host network, or none. */
export function devClusterPodFields(o: InstallOptions): { hostNetwork?: boolean; dnsPolicy?: string } {
  return o.devCluster ? { hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' } : {};
}

/** The pod security context of a component that runs as the image's non-root user (the image's default user is root). */
export function nonRootPodSecurity(): Record<string, unknown> {
  return { runAsNonRoot: true, runAsUser: 1001, seccompProfile: { type: 'RuntimeDefault' } };
}

/** The container security context of a component that needs no privilege. */
export function unprivilegedContainerSecurity(): Record<string, unknown> {
  return { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } };
}

/** Env of a component container: its pod name and namespace, plus the dev cluster's API server address. */
export function componentEnv(o: InstallOptions): Array<Record<string, unknown>> {
  const env: Array<Record<string, unknown>> = [
    { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
  ];
  if (o.devCluster) {
    env.push({ name: 'KUBERNETES_SERVICE_HOST', value: '127.0.0.1' });
    env.push({ name: 'KUBERNETES_SERVICE_PORT', value: String(o.devCluster.apiServerPort) });
  }
  return env;
}
