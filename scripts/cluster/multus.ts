/**
 * Multus as the cluster's CNI, as its thin-plugin install does: `00-multus.conf` in the
 * CNI configuration directory (containerd takes the first file), the `multus` plugin
 * delegating the cluster network to the bridge network list (network.ts) and adding the
 * networks a pod's `k8s.v1.cni.cncf.io/networks` annotation names, read with their
 * NetworkAttachmentDefinitions through a kubeconfig of its own: a client certificate for
 * {@link MULTUS_USER}, who may do what upstream's `multus` ClusterRole allows the thin
 * plugin and no more (read definitions, read pods and write their network-status, record
 * events). The plugin binary is built from the Go module proxy by
 * scripts/kube/build-multus.sh into the cache; without it the bridge network list alone is
 * the CNI configuration.
 *
 * The CNI binary directory is the cluster's own (`<cni>/bin`): links to Debian's plugins
 * and to the cached multus, so /usr/lib/cni is left as Debian installed it.
 */
import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { cacheDir } from '../../test/support/integration';
import { type ControlPlaneAccess, kubeBinDir } from '../../test/support/kube';
import { CNI_BIN_DIR } from './network';

/** The Multus thin plugin scripts/kube/build-multus.sh builds. */
export const multusBin = (): string => join(cacheDir, 'multus', 'current', 'bin', 'multus');

/** The cluster's CNI binary directory (containerd's `bin_dir`, Multus's `binDir`). */
export const cniBinDir = (cniDir: string): string => join(cniDir, 'bin');

/**
 * Fills `<cni>/bin` with links to every plugin in /usr/lib/cni, plus multus when it is
 * built; returns whether multus is among them.
 */
export function prepareCniBinDir(cniDir: string): boolean {
  const dir = cniBinDir(cniDir);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const name of readdirSync(CNI_BIN_DIR)) symlinkSync(join(CNI_BIN_DIR, name), join(dir, name));
  const multus = existsSync(multusBin());
  if (multus) symlinkSync(multusBin(), join(dir, 'multus'));
  return multus;
}

/**
 * Writes `<cni>/net.d/00-multus.conf`: Multus with `clusterNetwork` (the bridge network
 * list, by its file) as every pod's first interface, its delegate cache and log under the
 * CNI state, the kubeconfig it reads pods and NetworkAttachmentDefinitions with.
 */
export function writeMultusConfig(cniDir: string, kubeconfig: string, clusterNetworkFile: string): string {
  const netd = join(cniDir, 'net.d');
  mkdirSync(netd, { recursive: true });
  const conf = {
    cniVersion: '0.4.0',
    name: 'multus-cni-network',
    type: 'multus',
    kubeconfig,
    clusterNetwork: clusterNetworkFile,
    binDir: cniBinDir(cniDir),
    cniDir: join(cniDir, 'multus'),
    // Multus's own directory of networks named without a definition: none here.
    confDir: join(cniDir, 'multus.d'),
    logFile: join(cniDir, 'multus.log'),
    logLevel: 'verbose',
  };
  const file = join(netd, '00-multus.conf');
  writeFileSync(file, `${JSON.stringify(conf, null, 2)}\n`);
  return file;
}

/** The user Multus acts as (its client certificate's common name). */
export const MULTUS_USER = 'system:kubevirt-ts:multus';

/** Where Multus's kubeconfig is: the path its configuration names. */
export const multusKubeconfig = (cniDir: string): string => join(cniDir, 'multus.kubeconfig');

/**
 * What the thin plugin does with the API, as upstream's deployments/multus-daemonset.yml
 * grants it, but with definitions read-only (it never writes them; upstream grants `*`).
 */
export function multusRbac(): Record<string, unknown>[] {
  const name = 'kubevirt-ts-multus';
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name },
      rules: [
        {
          apiGroups: ['k8s.cni.cncf.io'],
          resources: ['network-attachment-definitions'],
          verbs: ['get', 'list', 'watch'],
        },
        { apiGroups: [''], resources: ['pods', 'pods/status'], verbs: ['get', 'update'] },
        { apiGroups: ['', 'events.k8s.io'], resources: ['events'], verbs: ['create', 'patch', 'update'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: MULTUS_USER }],
    },
  ];
}

/** Gives Multus its user on a running control plane: the RBAC above and the kubeconfig. */
export function grantMultusAccess(cp: ControlPlaneAccess, cniDir: string): void {
  const list = { apiVersion: 'v1', kind: 'List', items: multusRbac() };
  execFileSync(join(kubeBinDir, 'kubectl'), ['--kubeconfig', cp.kubeconfigPath, 'apply', '-f', '-'], {
    input: JSON.stringify(list),
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  copyFileSync(cp.kubeconfigFor(MULTUS_USER), multusKubeconfig(cniDir));
}
