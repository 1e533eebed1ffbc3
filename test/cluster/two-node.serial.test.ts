/**
 * `up --nodes 2`, and a second node added to a running cluster as the tests' broker does
 * (`sharedCluster({ nodes: 2 })`): a second kubelet node in its own mount and network
 * namespaces beside the first (scripts/cluster/extra-node.ts). Both nodes Ready; a pod pinned to each runs with
 * an address from its node's share of the pod subnet; the pods reach each other both ways
 * over the shared L2 segment; `kubectl logs` and `exec` work on node 2 (the API server
 * reaches its kubelet on the node network); `down` leaves no namespace process, interface,
 * cgroup root or mount of either node, and the host's firewall, kernel settings and
 * kubelet directories are as before up. Serial: one cluster per machine, its own up and down.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { CONTAINERD_BIN } from '../../scripts/cluster/containerd';
import { down } from '../../scripts/cluster/down';
import { kubepodsCgroups, leftovers, mountsUnder } from '../../scripts/cluster/host-cleanup';
import { hostState } from '../../scripts/cluster/host-state';
import { kubeletBin } from '../../scripts/cluster/kubelet';
import { linkExists } from '../../scripts/cluster/network';
import { cgroupRootDirs, namespaceOf } from '../../scripts/cluster/node-namespace';
import { nodeLinks } from '../../scripts/cluster/node-network';
import {
  type ClusterInfo,
  clusterPaths,
  daemonPid,
  type ExtraNodeInfo,
  readInfo,
} from '../../scripts/cluster/state';
import { addNodes, up } from '../../scripts/cluster/up';
import { clusterUnavailableReason, TEST_BRIDGE, TEST_POD_SUBNET, testStateDir } from '../support/cluster';
import { kubectlWith } from '../support/cluster-pods';
import { integration } from '../support/integration';
import { waitFor } from '../support/wait';

const why = clusterUnavailableReason();
const enabled = integration('two-node cluster', why === undefined, why ?? '');

/** Pids of processes in namespace `ns` (a `mnt:[...]` or `net:[...]` link). */
function processesIn(ns: string): number[] {
  const kind = ns.startsWith('mnt:') ? 'mnt' : 'net';
  return readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map(Number)
    .filter((pid) => namespaceOf(pid, kind) === ns);
}

/** Serves "I am <name>" on 8080 and says so on stdout (Node: the launcher image has it). */
const SERVER = `const name = process.argv[1];
require('node:http').createServer((req, res) => res.end('I am ' + name + '\\n')).listen(8080, () =>
  console.log(name + ' serving on ' + require('node:os').hostname()));`;

/** One GET (Node's http client), printing the body. */
const CLIENT = `require('node:http').get(process.argv[1], { timeout: 10000 }, (res) => res.pipe(process.stdout))
  .on('error', (e) => { console.error(e.message); process.exit(1); });`;

/** A pod pinned to `nodeName` serving its own name over HTTP on 8080. */
function webPod(name: string, nodeName: string, image: string) {
  return {
    metadata: { name, labels: { app: 'two-node' } },
    spec: {
      nodeName,
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: 1,
      enableServiceLinks: false,
      automountServiceAccountToken: false,
      containers: [
        {
          name: 'web',
          image,
          imagePullPolicy: 'Never',
          command: ['node', '-e', SERVER, name],
        },
      ],
    },
  };
}

const log = (l: string) => process.stderr.write(`[cluster] ${l}\n`);

/**
 * Brings the two nodes up (`up --nodes 2`, or one node with a pod running and then the
 * second added, as the tests' broker does), checks pods across them, brings them down and
 * checks nothing is left.
 */
async function twoNodes(how: 'up --nodes 2' | 'added to a running cluster'): Promise<void> {
  const stateDir = testStateDir();
  // The firewall (every nftables table and chain), the kernel settings both kubelets tune
  // and the kubelet's host directories: the same after down as before up.
  const hostBefore = hostState();
  const t0 = performance.now();
  let info: ClusterInfo = await up({
    stateDir,
    bridge: TEST_BRIDGE,
    podSubnet: TEST_POD_SUBNET,
    nodes: how === 'up --nodes 2' ? 2 : 1,
    ipamNodes: 2,
    log,
  });
  let upMs = Math.round(performance.now() - t0);
  let nsIds: string[] = [];
  let node2: ExtraNodeInfo | undefined;
  try {
    const kc = new KubeConfig();
    kc.loadFromFile(info.kubeconfigPath);
    const core = kc.makeApiClient(CoreV1Api);
    const kubectl = kubectlWith(info.kubeconfigPath);
    await waitFor(
      'default service account',
      () => core.readNamespacedServiceAccount({ name: 'default', namespace: 'default' }),
      60_000,
      200,
    );
    const image = info.images['virt-launcher'];
    const running = async (name: string) =>
      waitFor(
        `pod ${name} Running`,
        async () => {
          const p = await core.readNamespacedPod({ name, namespace: 'default' });
          return p.status?.phase === 'Running' && p.status.podIP ? p : undefined;
        },
        120_000,
        250,
      );
    if (how !== 'up --nodes 2') {
      // Node 1 has a pod (mounts, a netns) before node 2's namespaces are made.
      await core.createNamespacedPod({ namespace: 'default', body: webPod('web-a', info.nodeName, image) });
      await running('web-a');
      const t1 = performance.now();
      info = await addNodes(stateDir, 2, { log });
      upMs = Math.round(performance.now() - t1);
    }
    node2 = info.extraNodes?.[0];
    expect(readInfo(stateDir)).toEqual(info);
    expect(info.extraNodes).toHaveLength(1);
    if (!node2) throw new Error('no second node');
    expect(node2.nodeName).toBe(`${info.nodeName}-2`);
    expect(node2.nodeIP).toBe('10.245.128.2');
    expect(node2.podRange).toEqual({ start: '10.245.0.128', end: '10.245.0.253' });
    // Node 2's daemons run in the holder's namespaces, not the host's.
    const paths2 = clusterPaths(node2.dir);
    const kubelet2 = daemonPid(paths2, 'kubelet', kubeletBin());
    const containerd2 = daemonPid(paths2, 'containerd', CONTAINERD_BIN);
    expect(kubelet2).toBeGreaterThan(1);
    expect(containerd2).toBeGreaterThan(1);
    nsIds = [namespaceOf(node2.holderPid, 'mnt'), namespaceOf(node2.holderPid, 'net')].filter(
      (n): n is string => !!n,
    );
    expect(nsIds).toHaveLength(2);
    expect(nsIds).not.toContain(namespaceOf('self', 'mnt'));
    expect(nsIds).not.toContain(namespaceOf('self', 'net'));
    for (const pid of [kubelet2, containerd2] as number[]) {
      expect([namespaceOf(pid, 'mnt'), namespaceOf(pid, 'net')]).toEqual(nsIds);
    }
    expect(cgroupRootDirs(`${TEST_BRIDGE}-node2`).length).toBeGreaterThan(5);

    // Node 2's mount namespace holds no copy of node 1's mounts (they would keep node 1's
    // pod volumes and netns alive after its teardown): no mount there is rooted in node 1's
    // kubelet or containerd directory. Node 1's kubelet path shows node 2's own directory.
    const own = readFileSync(`/proc/${node2.holderPid}/mountinfo`, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => ({ root: l.split(' ')[3], at: l.split(' ')[4] }));
    const under = (p: string, dir: string) => p === dir || p.startsWith(`${dir}/`);
    for (const dir of [clusterPaths(stateDir).kubelet, clusterPaths(stateDir).containerd])
      expect(own.filter((m) => under(m.root, dir))).toEqual([]);
    expect(own).toContainEqual({ root: clusterPaths(node2.dir).kubelet, at: clusterPaths(stateDir).kubelet });
    for (const [name, ip] of [
      [info.nodeName, info.nodeIP],
      [node2.nodeName, node2.nodeIP],
    ]) {
      const node = await core.readNode({ name });
      expect(node.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
      expect(node.status?.addresses).toContainEqual({ type: 'InternalIP', address: ip });
    }

    const tPods = performance.now();
    if (how === 'up --nodes 2')
      await core.createNamespacedPod({ namespace: 'default', body: webPod('web-a', info.nodeName, image) });
    await core.createNamespacedPod({ namespace: 'default', body: webPod('web-b', node2.nodeName, image) });
    const [a, b] = await Promise.all([running('web-a'), running('web-b')]);
    process.stderr.write(
      `[two-node] both pods Running ${Math.round(performance.now() - tPods)} ms after create\n`,
    );
    expect(a.spec?.nodeName).toBe(info.nodeName);
    expect(b.spec?.nodeName).toBe(node2.nodeName);
    const lastOctet = (ip: string | undefined) => Number(ip?.split('.')[3]);
    expect(a.status?.podIP).toMatch(/^10\.245\.0\./);
    expect(lastOctet(a.status?.podIP)).toBeLessThanOrEqual(127);
    expect(b.status?.podIP).toMatch(/^10\.245\.0\./);
    expect(lastOctet(b.status?.podIP)).toBeGreaterThanOrEqual(128);

    // kubectl logs on node 2 (the API server to node 2's kubelet on the node network).
    const logsB = await waitFor(
      'web-b logs',
      () => {
        const out = kubectlWith(info.kubeconfigPath)('logs', '-n', 'default', 'web-b');
        return out.includes('web-b serving') ? out : undefined;
      },
      30_000,
      500,
    );
    expect(logsB).toContain('web-b serving on web-b');
    // Both ways over the shared segment; the exec into web-b is kubectl exec on node 2.
    const fetchFrom = (pod: string, ip: string | undefined) =>
      kubectl('exec', '-n', 'default', pod, '--', 'node', '-e', CLIENT, `http://${ip}:8080/`);
    expect(fetchFrom('web-a', b.status?.podIP).trim()).toBe('I am web-b');
    expect(fetchFrom('web-b', a.status?.podIP).trim()).toBe('I am web-a');
    expect(kubectl('exec', '-n', 'default', 'web-b', '--', 'busybox', 'hostname').trim()).toBe('web-b');
    // The node's pods are under its own cgroup root, not the first node's kubepods.
    expect(cgroupRootDirs(`${TEST_BRIDGE}-node2/kubepods`).length).toBeGreaterThan(5);
  } finally {
    const t1 = performance.now();
    const left = await down({ stateDir, bridge: TEST_BRIDGE, log });
    // up: the whole cluster's (up --nodes 2), or node 2's alone (added).
    process.stderr.write(`[two-node] ${how}: up ${upMs} ms, down ${Math.round(performance.now() - t1)} ms\n`);
    expect(left).toEqual([]);
  }
  expect(leftovers(stateDir, TEST_BRIDGE)).toEqual([]);
  expect(mountsUnder(stateDir)).toEqual([]);
  expect(linkExists(TEST_BRIDGE)).toBe(false);
  for (const link of Object.values(nodeLinks(TEST_BRIDGE))) expect(linkExists(link)).toBe(false);
  expect(kubepodsCgroups()).toEqual([]);
  expect(cgroupRootDirs(`${TEST_BRIDGE}-node2`)).toEqual([]);
  // The node's namespaces are gone: no process is left in them (their mounts went with them).
  for (const ns of nsIds) expect(processesIn(ns)).toEqual([]);
  if (node2) {
    const paths2 = clusterPaths(node2.dir);
    expect(daemonPid(paths2, 'containerd', CONTAINERD_BIN)).toBeUndefined();
    expect(daemonPid(paths2, 'kubelet', kubeletBin())).toBeUndefined();
  }
  expect(readInfo(stateDir)).toBeUndefined();
  expect(hostState()).toEqual(hostBefore);
}

describe.skipIf(!enabled)('two-node cluster', () => {
  it(
    'up --nodes 2: pods on both nodes reach each other, and down leaves nothing of either',
    () => twoNodes('up --nodes 2'),
    600_000,
  );

  it(
    "a second node added to a running cluster (the tests' broker): the same",
    () => twoNodes('added to a running cluster'),
    600_000,
  );
});
