/**
 * The node's kubelet: its KubeletConfiguration for these machines (cgroup v1 with the
 * cgroupfs driver, oomScoreAdj 0 for want of CAP_SYS_RESOURCE, image GC off so the
 * imported images stay, no iptables chains on the host), a client certificate as system:node:<name>, and the containerd
 * of this cluster as its runtime.
 */
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ControlPlaneAccess, kubeBinDir } from '../../test/support/kube';
import { REAL_NODES_CLUSTER_DNS_IP } from '../../test/support/kube-components';
import { containerdSocket } from './containerd';
import { type ClusterPaths, daemonPid, logTail, startDaemon, stopDaemon, waitFor } from './state';

export const kubeletBin = () => join(kubeBinDir, 'kubelet');

/** Checks a node name (it reaches certificates, flags and the API). */
export function checkNodeName(name: string): void {
  if (!/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(name)) {
    throw new Error(`node name ${JSON.stringify(name)}: must be a DNS-1123 label`);
  }
}

/** What differs between the nodes of one machine (`up --nodes 2`), beyond paths and address. */
export interface KubeletNodeOptions {
  /**
   * The node's cgroup root (e.g. `/kvts-test0-node2`, created beforehand): two kubelets
   * sharing `/kubepods` would each delete the other's pod cgroups as unknown.
   */
  cgroupRoot?: string;
  /** Taints the node registers with (the tests' shared cluster keeps unpinned pods off node 2). */
  taints?: { key: string; value?: string; effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute' }[];
  /**
   * The kubelet's pod limit (`maxPods`; the kubelet's default 110 when unset): raised for
   * density runs as upstream's scale set-ups do (HCO's KubeletConfig: 500). Checked by
   * {@link checkMaxPods}.
   */
  maxPods?: number;
}

/**
 * Refuses a `maxPods` the node cannot honour: a whole number from 1 up to `addresses`
 * (the pod IPs its CNI range hands out; a pod past them would fail in IPAM instead).
 */
export function checkMaxPods(maxPods: number, addresses: number): void {
  if (!Number.isInteger(maxPods) || maxPods < 1 || maxPods > addresses)
    throw new Error(
      `maxPods ${maxPods}: expected a whole number from 1 to ${addresses} (the node's pod addresses)`,
    );
}

/**
 * Writes kubelet.yaml (a KubeletConfiguration, JSON being valid YAML). Every node's
 * kubelet gets its configuration here, so one fix applies to all of them.
 */
export function writeKubeletConfig(
  paths: ClusterPaths,
  caFile: string,
  nodeIP: string,
  node: KubeletNodeOptions = {},
): string {
  mkdirSync(paths.kubelet, { recursive: true });
  const config = {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    address: nodeIP,
    port: 10250,
    readOnlyPort: 0,
    healthzBindAddress: '127.0.0.1',
    healthzPort: 10248,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: caFile },
    },
    authorization: { mode: 'Webhook' },
    containerRuntimeEndpoint: `unix://${containerdSocket(paths)}`,
    // cgroup v1 (hybrid) hosts with no systemd.
    cgroupDriver: 'cgroupfs',
    failCgroupV1: false,
    // runc cannot set a negative oom_score_adj without CAP_SYS_RESOURCE.
    oomScoreAdj: 0,
    // Images come from `ctr image import` and cannot be pulled again: never collect them.
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    // A shared build machine's disk is often fuller than the defaults allow.
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%' },
    failSwapOn: false,
    podLogsDir: join(paths.kubelet, 'pod-logs'),
    // Pods resolve through the kube-dns Service (dns.ts); the host's resolv.conf stays
    // what dnsPolicy Default and hostNetwork pods get.
    clusterDNS: [REAL_NODES_CLUSTER_DNS_IP],
    clusterDomain: 'cluster.local',
    resolvConf: '/etc/resolv.conf',
    rotateCertificates: false,
    serverTLSBootstrap: false,
    // Off the host's firewall: by default the kubelet creates iptables(-nft) tables and
    // chains (KUBE-IPTABLES-HINT, KUBE-KUBELET-CANARY, KUBE-FIREWALL in ip/ip6
    // filter/nat/mangle) for other components' sake, and nothing removes them. Nothing
    // here needs them: no kube-proxy, CNI with ipMasq off. (The only iptables use in
    // kubelet v1.34: pkg/kubelet/kubelet_network_linux.go, behind this option.)
    makeIPTablesUtilChains: false,
    ...(node.cgroupRoot ? { cgroupRoot: node.cgroupRoot } : {}),
    ...(node.taints?.length ? { registerWithTaints: node.taints } : {}),
    ...(node.maxPods !== undefined ? { maxPods: node.maxPods } : {}),
  };
  const file = join(paths.kubelet, 'kubelet.yaml');
  writeFileSync(file, `${JSON.stringify(config, null, 2)}\n`);
  return file;
}

/**
 * Starts the kubelet as `nodeName` (klog `-v`, default 1) and waits until its Node reports
 * Ready; `enter`: inside that node's namespaces (a second node, see startDaemon).
 */
export async function startKubelet(
  paths: ClusterPaths,
  cp: ControlPlaneAccess,
  nodeName: string,
  nodeIP: string,
  {
    readyTimeoutMs = 120_000,
    verbosity = 1,
    enter,
    node = {},
  }: { readyTimeoutMs?: number; verbosity?: number; enter?: number; node?: KubeletNodeOptions } = {},
): Promise<void> {
  checkNodeName(nodeName);
  if (daemonPid(paths, 'kubelet', kubeletBin())) throw new Error('the kubelet already runs for this cluster');
  const kubeconfig = cp.kubeconfigFor(`system:node:${nodeName}`, ['system:nodes']);
  const config = writeKubeletConfig(paths, cp.tls.ca, nodeIP, node);
  const proc = startDaemon(
    paths,
    'kubelet',
    kubeletBin(),
    [
      `--config=${config}`,
      `--kubeconfig=${kubeconfig}`,
      `--root-dir=${paths.kubelet}`,
      `--cert-dir=${join(paths.kubelet, 'pki')}`,
      `--hostname-override=${nodeName}`,
      `--node-ip=${nodeIP}`,
      `--v=${verbosity}`,
    ],
    enter,
  );
  await waitFor(
    `kubelet (node ${nodeName} Ready)`,
    readyTimeoutMs,
    async () => {
      if (proc.exitCode !== null) throw new Error(`the kubelet exited: ${logTail(paths, 'kubelet')}`);
      const { status, body } = await cp.get(`/api/v1/nodes/${nodeName}`);
      if (status !== 200) return false;
      const node = JSON.parse(body) as { status?: { conditions?: { type: string; status: string }[] } };
      return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
    },
    () => logTail(paths, 'kubelet'),
  );
}

/**
 * The pid of a kubelet running on this machine, any kubelet (one per machine: its ports,
 * device-plugin socket and kubepods cgroups are fixed), or undefined.
 */
export function runningKubelet(): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv0 = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0')[0];
      if (argv0 === 'kubelet' || argv0.endsWith('/kubelet')) return Number(entry);
    } catch {
      // Gone meanwhile.
    }
  }
  return undefined;
}

/** Stops the kubelet (containers keep running; `killTasks` ends them). */
export async function stopKubelet(paths: ClusterPaths): Promise<void> {
  await stopDaemon(paths, 'kubelet', kubeletBin());
}
