/**
 * A second kubelet node beside the first (`up --nodes 2`): its own namespaces
 * (node-namespace.ts), networks (node-network.ts), cgroup root, containerd with its own
 * image store, kubelet (the same KubeletConfiguration builder as the first node) and a
 * relay to the API server, which listens on the host's 127.0.0.1 only: socat listens on
 * the node's 127.0.0.1 at the API server's port and forwards through a unix socket to a
 * second socat on the host, so kubeconfigs stay unchanged and hostNetwork pods on the
 * node reach the API at 127.0.0.1 too. Its state lives in `<stateDir>/nodes/<name>/`, its
 * record in `node.json` there, written before anything starts so `down` finds it all.
 */
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import type { ControlPlaneAccess } from '../../test/support/kube';
import { containerdSocket, killTasks, startContainerd, stopContainerd } from './containerd';
import { type BuiltImage, importProjectImages } from './images';
import { prepareServiceRouting, SERVICE_CIDR, startKubeProxy, stopKubeProxy } from './kube-proxy';
import { type KubeletNodeOptions, startKubelet, stopKubelet } from './kubelet';
import { MULTUS_USER, multusKubeconfig, prepareCniBinDir, writeMultusConfig } from './multus';
import { writeCniConfig } from './network';
import {
  cgroupRootDirs,
  createCgroupRoot,
  killNodeProcesses,
  namespaceOf,
  nodeProcesses,
  prepareNodeMounts,
  removeCgroupRoot,
  removeMountPoints,
  startHolder,
} from './node-namespace';
import { connectNode, disconnectNode, nodeLinksLeft, podBridgeAddress2, podRange } from './node-network';
import {
  type ClusterPaths,
  clusterPaths,
  type ExtraNodeInfo,
  startDaemon,
  stopDaemon,
  waitFor,
} from './state';

const SOCAT = '/usr/bin/socat';

/** node.json: the node's record plus its namespaces' ids (to find processes left in them). */
interface NodeRecord extends Partial<ExtraNodeInfo> {
  dir: string;
  nodeName: string;
  bridge: string;
  nsIds: string[];
  /** Host directories created as mount points (removed at down when empty). */
  createdDirs?: string[];
}

/** Where the extra nodes' directories are. */
export const nodesDir = (stateDir: string): string => join(stateDir, 'nodes');

/** The cgroup root's name of the second node of the cluster on `bridge`. */
export const cgroupRootName = (bridge: string): string => `${bridge}-node2`;

/** Options of {@link addNode}. */
export interface AddNodeOptions {
  stateDir: string;
  cp: ControlPlaneAccess;
  nodeName: string;
  /** The first node's pod bridge (on the host) and the cluster's pod subnet. */
  bridge: string;
  podSubnet: string;
  /** The first node's address (the node gets a route to it). */
  firstNodeIP: string;
  images: Record<string, BuiltImage>;
  log: (line: string) => void;
  traceLogs?: boolean;
  /** Taints node 2 registers with (default none). */
  taints?: KubeletNodeOptions['taints'];
}

/** Brings node 2 up until its Node is Ready; `down` (stopExtraNodes) undoes every step. */
export async function addNode(o: AddNodeOptions): Promise<ExtraNodeInfo> {
  const dir = join(nodesDir(o.stateDir), o.nodeName);
  const paths = clusterPaths(dir);
  const lap = (what: string, since: number) =>
    o.log(`${o.nodeName}: ${what}: ${Math.round(performance.now() - since)} ms`);
  const t0 = performance.now();
  let t = t0;
  mkdirSync(dir, { recursive: true });
  const holderPid = await startHolder(dir);
  const record: NodeRecord = {
    dir,
    nodeName: o.nodeName,
    bridge: o.bridge,
    holderPid,
    nsIds: [namespaceOf(holderPid, 'mnt'), namespaceOf(holderPid, 'net')].filter((n): n is string => !!n),
  };
  const save = () => writeFileSync(join(dir, 'node.json'), `${JSON.stringify(record, null, 2)}\n`);
  save();
  // Node 2's kubelet directory also appears at the first node's kubelet path in its mount
  // namespace, as every node of a real cluster has /var/lib/kubelet: one DaemonSet's
  // hostPath (virt-handler's `<kubelet root>/pods`) then means each node's own.
  record.createdDirs = prepareNodeMounts(holderPid, o.stateDir, dir, [
    [paths.kubelet, clusterPaths(o.stateDir).kubelet],
  ]);
  save();
  const { nodeIP } = connectNode(holderPid, {
    bridge: o.bridge,
    podSubnet: o.podSubnet,
    firstNodeIP: o.firstNodeIP,
  });
  const cgroupRoot = createCgroupRoot(cgroupRootName(o.bridge));
  const range = podRange(o.podSubnet, 2, 2);
  if (!range) throw new Error('node 2: no pod range');
  Object.assign(record, { nodeIP, cgroupRoot, podRange: range, containerdSocket: containerdSocket(paths) });
  save();
  const multus = prepareCniBinDir(paths.cni);
  // Its pods reach ClusterIPs through its own bridge address, where its kube-proxy NATs.
  const podGateway = podBridgeAddress2(o.podSubnet).split('/')[0];
  prepareServiceRouting(o.bridge, holderPid);
  const bridgeNetwork = writeCniConfig(paths.cni, o.bridge, o.podSubnet, range, {
    dst: SERVICE_CIDR,
    gw: podGateway,
  });
  // Multus in front of it, as on the first node (which granted its user), so a pod
  // migrated here gets the secondary networks its annotation names.
  if (multus) {
    writeMultusConfig(paths.cni, multusKubeconfig(paths.cni), bridgeNetwork);
    copyFileSync(o.cp.kubeconfigFor(MULTUS_USER), multusKubeconfig(paths.cni));
  }
  lap(`namespaces, network (${nodeIP}, pods ${range.start}-${range.end}), cgroup root ${cgroupRoot}`, t);

  t = performance.now();
  await startContainerd(paths, o.images.pause.ref, o.traceLogs ? 'info' : 'warn', holderPid);
  lap('containerd', t);
  t = performance.now();
  lap(`images (${importProjectImages(paths, o.images)})`, t);

  t = performance.now();
  await startApiRelay(paths, holderPid, Number(new URL(o.cp.server).port));
  await startKubelet(paths, o.cp, o.nodeName, nodeIP, {
    enter: holderPid,
    node: { cgroupRoot, taints: o.taints },
    verbosity: o.traceLogs ? 2 : 1,
  });
  lap(`kubelet (node ${o.nodeName} Ready)`, t);
  t = performance.now();
  await startKubeProxy(paths, o.cp, {
    nodeName: o.nodeName,
    podSubnet: o.podSubnet,
    bridgeAddress: podGateway,
    enter: holderPid,
  });
  lap('kube-proxy (nftables, in its namespace) synced', t);
  lap('node up', t0);
  return {
    nodeName: o.nodeName,
    nodeIP,
    dir,
    containerdSocket: containerdSocket(paths),
    holderPid,
    cgroupRoot,
    podRange: range,
  };
}

/** The two socat processes of the API relay (host side first, then the node's listener). */
async function startApiRelay(paths: ClusterPaths, holder: number, port: number): Promise<void> {
  const sock = join(paths.root, 'api.sock');
  rmSync(sock, { force: true });
  startDaemon(paths, 'api-relay-host', SOCAT, [`UNIX-LISTEN:${sock},fork,mode=600`, `TCP:127.0.0.1:${port}`]);
  await waitFor('the API relay socket', 10_000, () => existsSync(sock));
  startDaemon(
    paths,
    'api-relay-node',
    SOCAT,
    [`TCP-LISTEN:${port},bind=127.0.0.1,fork,reuseaddr`, `UNIX-CONNECT:${sock}`],
    holder,
  );
}

function readRecords(stateDir: string): NodeRecord[] {
  const root = nodesDir(stateDir);
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .map((name) => join(root, name, 'node.json'))
    .filter((f) => existsSync(f))
    .map((f) => JSON.parse(readFileSync(f, 'utf8')) as NodeRecord);
}

/**
 * Stops every extra node of the cluster in `stateDir`: its kubelet, then the containers it
 * left (with ctr: shims would keep the node's mount namespace alive), containerd, the
 * relay and the holder (the namespaces and every mount in them go with the last process),
 * then its host interfaces and cgroup root. containerd's image store stays. Returns what
 * could not be removed.
 */
export async function stopExtraNodes(
  stateDir: string,
  bridge: string,
  log: (line: string) => void,
): Promise<string[]> {
  const stuck: string[] = [];
  for (const r of readRecords(stateDir)) {
    // One node's failure must not stop the rest of `down` (the first node, the control plane).
    try {
      await stopNode(r, log);
    } catch (err) {
      stuck.push(`node ${r.nodeName}: ${(err as Error).message.split('\n')[0]}`);
    }
  }
  // What a node that failed before its record was complete may have left.
  const strays = await killNodeProcesses(`${nodesDir(stateDir)}/`, []);
  if (strays) log(`${strays} stray node process(es) ended`);
  if (bridge.length <= 12) {
    try {
      disconnectNode(bridge);
    } catch (err) {
      stuck.push(`node links: ${(err as Error).message.split('\n')[0]}`);
    }
    stuck.push(...removeCgroupRoot(cgroupRootName(bridge)));
  }
  return stuck;
}

/** Stops one extra node, in stopExtraNodes' order. */
async function stopNode(r: NodeRecord, log: (line: string) => void): Promise<void> {
  const t = performance.now();
  const paths = clusterPaths(r.dir);
  await stopKubeProxy(paths);
  await stopKubelet(paths);
  const killed = killTasks(paths);
  await stopContainerd(paths);
  await stopDaemon(paths, 'api-relay-node', SOCAT, 3_000);
  await stopDaemon(paths, 'api-relay-host', SOCAT, 3_000);
  const rest = await killNodeProcesses(r.dir, r.nsIds);
  disconnectNode(r.bridge);
  removeMountPoints(r.createdDirs ?? []);
  const stuck = removeCgroupRoot(cgroupRootName(r.bridge));
  if (stuck.length) throw new Error(stuck.join('; '));
  for (const d of [
    paths.kubelet,
    paths.cni,
    paths.pids,
    join(r.dir, 'host'),
    join(r.dir, 'api.sock'),
    join(r.dir, 'kube-proxy'),
  ]) {
    rmSync(d, { recursive: true, force: true });
  }
  rmSync(join(paths.containerd, 'state'), { recursive: true, force: true });
  rmSync(join(r.dir, 'node.json'), { force: true });
  log(
    `${r.nodeName} down${killed ? `, ${killed} container(s) removed with ctr` : ''}${rest ? `, ${rest} process(es) ended` : ''}: ${Math.round(performance.now() - t)} ms`,
  );
}

/**
 * What extra nodes of the cluster in `stateDir` on `bridge` left on the host: a record
 * (node.json), processes (the holder, the daemons and shims naming a node's directory, any
 * process in a recorded namespace), host interfaces and cgroup roots.
 */
export function extraNodeLeftovers(stateDir: string, bridge: string): string[] {
  const records = readRecords(stateDir);
  const nsIds = records.flatMap((r) => r.nsIds);
  const procs = nodeProcesses(`${nodesDir(stateDir)}/`, nsIds);
  return [
    ...records.map((r) => `node record ${join(r.dir, 'node.json')}`),
    ...procs.map((p) => `process ${p.pid}: ${p.argv.join(' ').slice(0, 160)}`),
    ...nodeLinksLeft(bridge).map((l) => `interface ${l}`),
    ...cgroupRootDirs(cgroupRootName(bridge)).map((c) => `cgroup ${c}`),
  ];
}
