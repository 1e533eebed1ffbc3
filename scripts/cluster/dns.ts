/**
 * Cluster DNS on the test cluster, as a user's cluster has it: CoreDNS serving
 * `cluster.local` (and reverse lookups) from the API, behind the `kube-dns` Service at
 * {@link CLUSTER_DNS_IP}, which every node's kubelet writes into its pods' resolv.conf
 * (kubelet.ts). What these machines change:
 *
 * - CoreDNS is a minimal build (scripts/kube/coredns, built by
 *   scripts/kube/build-coredns.sh) run as a host process, like the API relay: it listens
 *   on the first node's pod bridge address, port 53 (UDP and TCP), and reads the API as
 *   its own user `system:coredns` (upstream's ClusterRole of that name);
 * - the Service has no selector: a manual EndpointSlice names that bridge address, and
 *   each node's kube-proxy DNATs its pods' queries there (node 2's pods reach it over the
 *   shared pod segment, as they reach the API relay);
 * - no forwarding: a name outside the served zones gets REFUSED, so no query leaves this
 *   machine.
 */

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { Resolver } from 'node:dns/promises';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheDir } from '../../test/support/integration';
import { type ControlPlaneAccess, kubeBinDir } from '../../test/support/kube';
import { REAL_NODES_CLUSTER_DNS_IP, REAL_NODES_KUBERNETES_IP } from '../../test/support/kube-components';
import { type ClusterPaths, logTail, startDaemon, stopDaemon, waitFor } from './state';

/** The `kube-dns` Service's ClusterIP (kubeadm's choice: the service range's .10). */
export const CLUSTER_DNS_IP = REAL_NODES_CLUSTER_DNS_IP;
/** The cluster's DNS domain (the kubelet's `clusterDomain`). */
export const CLUSTER_DOMAIN = 'cluster.local';
/** The API user CoreDNS reads Services and EndpointSlices as. */
export const COREDNS_USER = 'system:coredns';

const sourceDir = join(dirname(fileURLToPath(import.meta.url)), '..', 'kube', 'coredns');

/**
 * The build's cache key, as scripts/kube/build-coredns.sh computes it: the CoreDNS version
 * from go.mod, then the first 12 hex digits of sha256(main.go + go.mod + go.sum).
 */
export function coreDnsKey(dir = sourceDir): string {
  const files = ['main.go', 'go.mod', 'go.sum'].map((f) => readFileSync(join(dir, f)));
  const version = /^require github\.com\/coredns\/coredns (v[0-9.]+)$/m.exec(files[1].toString())?.[1];
  if (!version) throw new Error(`no CoreDNS version in ${join(dir, 'go.mod')}`);
  const hash = createHash('sha256');
  for (const f of files) hash.update(f);
  return `${version}-${hash.digest('hex').slice(0, 12)}`;
}

/** The CoreDNS binary built from this checkout's source. */
export const coreDnsBin = (): string => join(cacheDir, 'coredns', coreDnsKey(), 'bin', 'coredns');

/** The Corefile: one server block on `address`:53, the cluster's zones from the API. */
export function corefile(address: string, kubeconfig: string): string {
  return `${CLUSTER_DOMAIN}:53 in-addr.arpa:53 {
    bind ${address}
    errors
    cache 30
    kubernetes ${CLUSTER_DOMAIN} in-addr.arpa {
        kubeconfig ${kubeconfig}
        pods insecure
    }
}
`;
}

/**
 * What the API holds for cluster DNS: upstream's `system:coredns` ClusterRole bound to
 * {@link COREDNS_USER}, the `kube-dns` Service (no selector) and its EndpointSlice naming
 * `address`, where CoreDNS listens.
 */
export function clusterDnsObjects(address: string): object[] {
  const ports = [
    { name: 'dns', port: 53, protocol: 'UDP' },
    { name: 'dns-tcp', port: 53, protocol: 'TCP' },
  ];
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'system:coredns' },
      rules: [
        {
          apiGroups: [''],
          resources: ['endpoints', 'services', 'pods', 'namespaces'],
          verbs: ['list', 'watch'],
        },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'system:coredns' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:coredns' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: COREDNS_USER }],
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {
        name: 'kube-dns',
        namespace: 'kube-system',
        labels: { 'k8s-app': 'kube-dns', 'kubernetes.io/name': 'CoreDNS' },
      },
      spec: {
        clusterIP: CLUSTER_DNS_IP,
        ports: ports.map((p) => ({ ...p, targetPort: 53 })),
      },
    },
    {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: {
        name: 'kube-dns-host',
        namespace: 'kube-system',
        labels: {
          'kubernetes.io/service-name': 'kube-dns',
          // Not the EndpointSlice controller's value, so it leaves this slice alone.
          'endpointslice.kubernetes.io/managed-by': 'cluster-up.kubevirt-ts.io',
        },
      },
      addressType: 'IPv4',
      endpoints: [{ addresses: [address], conditions: { ready: true } }],
      ports,
    },
  ];
}

/**
 * Starts CoreDNS on `address` (the first node's pod bridge address), creates the
 * `kube-dns` Service and its EndpointSlice, and waits until CoreDNS answers the
 * `kubernetes` Service's name with its ClusterIP (so it has synced with the API).
 */
export async function startClusterDns(
  paths: ClusterPaths,
  cp: ControlPlaneAccess,
  address: string,
): Promise<void> {
  const binary = coreDnsBin();
  if (!existsSync(binary))
    throw new Error(`CoreDNS is not built (${binary}): run scripts/kube/build-coredns.sh`);
  execFileSync(join(kubeBinDir, 'kubectl'), ['--kubeconfig', cp.kubeconfigPath, 'apply', '-f', '-'], {
    input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: clusterDnsObjects(address) }),
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  const conf = join(paths.root, 'Corefile');
  writeFileSync(conf, corefile(address, cp.kubeconfigFor(COREDNS_USER)));
  const proc = startDaemon(paths, 'coredns', binary, ['-conf', conf]);
  const resolver = new Resolver({ timeout: 1_000, tries: 1 });
  resolver.setServers([address]);
  await waitFor(
    `CoreDNS on ${address}:53 answering`,
    30_000,
    async () => {
      if (proc.exitCode !== null) throw new Error(`CoreDNS exited: ${logTail(paths, 'coredns')}`);
      const ips = await resolver.resolve4(`kubernetes.default.svc.${CLUSTER_DOMAIN}`);
      return ips.includes(REAL_NODES_KUBERNETES_IP);
    },
    () => logTail(paths, 'coredns'),
  );
}

/**
 * Stops the CoreDNS that `up` started, whichever build it was (the pid file's process
 * when its binary is one of the cache's CoreDNS builds: a checkout changed since `up`
 * has another key).
 */
export async function stopClusterDns(paths: ClusterPaths): Promise<void> {
  const file = join(paths.pids, 'coredns.pid');
  if (!existsSync(file)) return;
  const pid = Number.parseInt(readFileSync(file, 'utf8'), 10);
  let argv0 = '';
  try {
    argv0 = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0];
  } catch {
    return;
  }
  if (argv0.startsWith(join(cacheDir, 'coredns')) && argv0.endsWith('/bin/coredns'))
    await stopDaemon(paths, 'coredns', argv0, 5_000);
}
