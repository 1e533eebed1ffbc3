/**
 * Services on the test cluster as on a user's: kube-proxy in nftables mode on each node
 * (its own tables, `ip kube-proxy` and `ip6 kube-proxy`, in that node's network
 * namespace), ClusterIPs from {@link REAL_NODES_SERVICE_CIDR}, and what these machines add
 * so traffic to a ClusterIP stays here and comes back:
 *
 * - each node routes the service range onto its pod bridge (never the host's default
 *   route) and pods get a route to it through their node's bridge address (network.ts);
 * - IPv4 forwarding on the pod bridge only (`net.ipv4.conf.<bridge>.forwarding`, which
 *   goes with the bridge; `ip_forward` stays 0): a pod's packet to a ClusterIP, DNATed to
 *   a pod on the same segment, leaves through the bridge it came in on;
 * - kube-proxy masquerades all Service traffic (`masqueradeAll`), so that reply comes back
 *   through the node to be un-NATed (the pod bridge has no br_netfilter);
 * - the project's table `ip kubevirt-ts-<bridge>` drops the ICMP redirects the node would
 *   otherwise send for such a hairpin (a pod obeying one would send the ClusterIP's
 *   packets straight to the endpoint, which drops them);
 * - the API server listens on 127.0.0.1 only: a relay on the bridge address (its
 *   advertised address, so the `kubernetes` Service's endpoint) forwards to it.
 *
 * kube-proxy leaves the conntrack sysctls alone (`conntrack` all 0) and binds its NodePorts
 * to the node's bridge address only. `down` deletes the host's tables when `up` found none
 * (host-state.ts records them); node 2's go with its network namespace.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ControlPlaneAccess, kubeBinDir } from '../../test/support/kube';
import {
  REAL_NODES_CLUSTER_DNS_IP,
  REAL_NODES_KUBERNETES_IP,
  REAL_NODES_SERVICE_CIDR,
} from '../../test/support/kube-components';
import { inNode } from './node-namespace';
import { type ClusterPaths, logTail, run, startDaemon, stopDaemon, waitFor } from './state';

export { REAL_NODES_SERVICE_CIDR as SERVICE_CIDR };

const SOCAT = '/usr/bin/socat';
export const kubeProxyBin = () => join(kubeBinDir, 'kube-proxy');

/** kube-proxy's own nftables tables (fixed names upstream). */
export const KUBE_PROXY_TABLES = ['table ip kube-proxy', 'table ip6 kube-proxy'] as const;

/** The project's nftables table on a node whose pod bridge is `bridge`. */
export const projectTable = (bridge: string): string => `kubevirt-ts-${bridge}`;

/** The KubeProxyConfiguration of one node (JSON is YAML); returns its path. */
export function writeKubeProxyConfig(
  paths: ClusterPaths,
  o: { kubeconfig: string; nodeName: string; podSubnet: string; bridgeAddress: string },
): string {
  const dir = join(paths.root, 'kube-proxy');
  mkdirSync(dir, { recursive: true });
  const config = {
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1',
    kind: 'KubeProxyConfiguration',
    mode: 'nftables',
    clientConnection: { kubeconfig: o.kubeconfig },
    hostnameOverride: o.nodeName,
    clusterCIDR: o.podSubnet,
    // Each node's own loopback (node 2 has its own network namespace): no port collides.
    healthzBindAddress: '127.0.0.1:10256',
    metricsBindAddress: '127.0.0.1:10249',
    nodePortAddresses: [`${o.bridgeAddress}/32`],
    nftables: { masqueradeAll: true, syncPeriod: '30s', minSyncPeriod: '0s' },
    // 0: leave the host's conntrack limits and timeouts as they are.
    conntrack: {
      maxPerCore: 0,
      min: 0,
      tcpEstablishedTimeout: '0s',
      tcpCloseWaitTimeout: '0s',
    },
    // No CAP_SYS_RESOURCE here (as for the kubelet and containerd).
    oomScoreAdj: 0,
  };
  const file = join(dir, 'kube-proxy.yaml');
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`);
  return file;
}

/**
 * The node's side of Service routing (see the file comment), in the host's network
 * namespace or, with `holder`, node 2's: forwarding on the pod bridge, the service range
 * routed onto it, and the table dropping ICMP redirects out of it.
 */
export function prepareServiceRouting(bridge: string, holder?: number): void {
  const table = projectTable(bridge);
  const script = `sysctl -qw "net.ipv4.conf.$1.forwarding=1"
ip route replace "$2" dev "$1"
nft -f - <<EOF
table ip $3 {
  chain no-redirects {
    type filter hook output priority 0; policy accept;
    oifname "$1" icmp type redirect drop
  }
}
EOF`;
  if (holder === undefined) run('sh', ['-euc', script, 'sh', bridge, REAL_NODES_SERVICE_CIDR, table]);
  else inNode(holder, script, bridge, REAL_NODES_SERVICE_CIDR, table);
}

/**
 * Deletes the project's table and kube-proxy's from the host's network namespace (the
 * bridge takes its route and forwarding setting with it). `keep`: firewall lines that
 * existed before `up` (host-state.ts), which are left alone. Returns what it deleted.
 */
export function removeServiceTables(bridge: string, keep: string[] = []): string[] {
  const had = new Set(keep);
  const wanted = [`table ip ${projectTable(bridge)}`, ...KUBE_PROXY_TABLES].filter((t) => !had.has(t));
  const removed: string[] = [];
  for (const t of wanted) {
    const [, family, name] = t.split(' ');
    try {
      run('nft', ['delete', 'table', family, name]);
      removed.push(t);
    } catch {
      // Not there.
    }
  }
  return removed;
}

/** Which of the tables {@link removeServiceTables} deletes exist on the host (beyond `keep`). */
export function serviceTablesLeft(bridge: string, keep: string[] = []): string[] {
  let listed: string;
  try {
    listed = run('nft', ['list', 'tables']);
  } catch {
    return [];
  }
  const had = new Set(keep);
  const present = new Set(listed.split('\n').map((l) => l.trim()));
  return [`table ip ${projectTable(bridge)}`, ...KUBE_PROXY_TABLES].filter(
    (t) => present.has(t) && !had.has(t),
  );
}

/**
 * Starts the API relay on the host: socat on `address` (the pod bridge's, the API
 * server's advertised address) at the API server's port, forwarding to 127.0.0.1.
 */
export async function startApiServiceRelay(
  paths: ClusterPaths,
  address: string,
  port: number,
): Promise<void> {
  startDaemon(paths, 'api-relay-pods', SOCAT, [
    `TCP-LISTEN:${port},bind=${address},fork,reuseaddr`,
    `TCP:127.0.0.1:${port}`,
  ]);
  await waitFor('the API relay for pods', 10_000, () => {
    try {
      return run('ss', ['-Hltn', `src ${address}:${port}`]).trim() !== '';
    } catch {
      return false;
    }
  });
}

/** Stops the host's API relay for pods. */
export const stopApiServiceRelay = (paths: ClusterPaths) => stopDaemon(paths, 'api-relay-pods', SOCAT, 3_000);

/**
 * Starts kube-proxy for node `nodeName` (as `system:kube-proxy`, bound to the
 * `system:node-proxier` ClusterRole by the API server's bootstrap policy) and waits for
 * its first sync: the `kubernetes` and `kube-dns` Services' ClusterIPs in its table.
 */
export async function startKubeProxy(
  paths: ClusterPaths,
  cp: ControlPlaneAccess,
  o: { nodeName: string; podSubnet: string; bridgeAddress: string; enter?: number },
): Promise<void> {
  const kubeconfig = cp.kubeconfigFor('system:kube-proxy');
  const config = writeKubeProxyConfig(paths, { ...o, kubeconfig });
  const proc = startDaemon(paths, 'kube-proxy', kubeProxyBin(), [`--config=${config}`, '--v=1'], o.enter);
  const list = () =>
    o.enter === undefined
      ? run('nft', ['list', 'table', 'ip', 'kube-proxy'])
      : inNode(o.enter, 'nft list table ip kube-proxy');
  await waitFor(
    `kube-proxy (node ${o.nodeName}) synced`,
    60_000,
    () => {
      if (proc.exitCode !== null) throw new Error(`kube-proxy exited: ${logTail(paths, 'kube-proxy')}`);
      const table = list();
      return table.includes(REAL_NODES_KUBERNETES_IP) && table.includes(REAL_NODES_CLUSTER_DNS_IP);
    },
    () => logTail(paths, 'kube-proxy'),
  );
}

/** Stops kube-proxy (its tables stay until {@link removeServiceTables} or the namespace goes). */
export const stopKubeProxy = (paths: ClusterPaths) => stopDaemon(paths, 'kube-proxy', kubeProxyBin(), 5_000);
