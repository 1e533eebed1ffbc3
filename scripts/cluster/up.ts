/**
 * `cluster up`: a real one-node Kubernetes cluster from an empty state. Order: the pod
 * bridge and CNI config, containerd (and the project's images imported into it), the
 * control plane (test/support/kube.ts's startControlPlane, detached, serving real
 * kubelets) with the API relay and cluster DNS (dns.ts) on the bridge address, then the
 * kubelet, until its Node is Ready, and kube-proxy. With `nodes: 2`, a second node
 * in its own namespaces after that (extra-node.ts).
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir } from '../../test/support/integration';
import {
  accessTo,
  available as controlPlaneBuilt,
  kubeBinDir,
  startControlPlane,
} from '../../test/support/kube';
import { CONTAINERD_BIN, containerdSocket, startContainerd } from './containerd';
import { coreDnsBin, startClusterDns } from './dns';
import { down } from './down';
import { type AddNodeOptions, addNode } from './extra-node';
import { leftovers } from './host-cleanup';
import { hasHostRecord, recordHostState } from './host-state';
import { importProjectImages, readImages } from './images';
import {
  kubeProxyBin,
  prepareServiceRouting,
  SERVICE_CIDR,
  startApiServiceRelay,
  startKubeProxy,
} from './kube-proxy';
import { checkMaxPods, checkNodeName, kubeletBin, runningKubelet, startKubelet } from './kubelet';
import {
  grantMultusAccess,
  multusBin,
  multusKubeconfig,
  prepareCniBinDir,
  writeMultusConfig,
} from './multus';
import {
  bridgeAddress,
  CNI_BIN_DIR,
  checkBridgeName,
  createBridge,
  interfaceIPv4,
  writeCniConfig,
} from './network';
import { MAX_NODES, nodeLinks, podAddressCount, podRange } from './node-network';
import { type ClusterInfo, clusterPaths, daemonPid, readInfo, writeInfo } from './state';

/** Options of {@link up}; every one has a default. */
export interface UpOptions {
  stateDir: string;
  /** Default: this machine's short hostname in lower case, else "kubevirt-ts-node". */
  nodeName?: string;
  /** Default: eth0's IPv4 address. */
  nodeIP?: string;
  /** Default kvts-br0. */
  bridge?: string;
  /** An IPv4 /24, default 10.244.0.0/24. */
  podSubnet?: string;
  /** images.json of scripts/images/build.sh; default {@link defaultImagesFile}. */
  imagesFile?: string;
  /** Progress lines (timings); default silent. */
  log?: (line: string) => void;
  /**
   * Timing logs: containerd at level info (each sandbox's and container's start) and the
   * kubelet at -v=2 (its sync loop's pod events), for bench:cluster's timeline. Default off.
   */
  traceLogs?: boolean;
  /** How many kubelet nodes to run: 1 (default) or 2 (the second in its own namespaces). */
  nodes?: number;
  /**
   * How many nodes share the pod subnet's addresses (default `nodes`): with 2 and one node
   * up, the first node allocates from .2-.127 only, so {@link addNodes} can add the
   * second later (the tests' broker does).
   */
  ipamNodes?: number;
  /**
   * The first node's kubelet `maxPods` (default: the kubelet's 110): raised for density
   * runs (bench/density.ts), at most the node's pod addresses.
   */
  maxPods?: number;
}

/**
 * Default images.json: `$KUBEVIRT_TS_CLUSTER_IMAGES` when set (a copy of one build's
 * images.json and layouts, which a later build from another checkout cannot replace),
 * else `$KUBEVIRT_TS_CACHE/images/images.json`, the last build's.
 */
export const defaultImagesFile = () =>
  process.env.KUBEVIRT_TS_CLUSTER_IMAGES || join(cacheDir, 'images', 'images.json');

/** What the cluster needs from the host; an empty list when everything is there. */
export function missingPieces(imagesFile = defaultImagesFile()): string[] {
  const missing: string[] = [];
  if (!controlPlaneBuilt())
    missing.push(`the Kubernetes control plane (${kubeBinDir}): run scripts/kube/build.sh`);
  if (!existsSync(kubeletBin())) missing.push(`the kubelet (${kubeletBin()}): run scripts/kube/build.sh`);
  if (!existsSync(kubeProxyBin())) missing.push(`kube-proxy (${kubeProxyBin()}): run scripts/kube/build.sh`);
  if (!existsSync(coreDnsBin())) missing.push(`CoreDNS (${coreDnsBin()}): run scripts/kube/build-coredns.sh`);
  for (const bin of [
    CONTAINERD_BIN,
    '/usr/sbin/runc',
    join(CNI_BIN_DIR, 'bridge'),
    join(CNI_BIN_DIR, 'host-local'),
  ]) {
    if (!existsSync(bin)) missing.push(`${bin}: run scripts/cluster/setup.sh (Debian packages)`);
  }
  if (!existsSync(imagesFile)) missing.push(`the images (${imagesFile}): run scripts/images/build.sh`);
  if (process.getuid?.() !== 0) missing.push('root (containerd, the kubelet, the bridge)');
  return missing;
}

function defaultNodeName(): string {
  const host = readFileSync('/proc/sys/kernel/hostname', 'utf8').trim().split('.')[0].toLowerCase();
  return /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(host) ? host : 'kubevirt-ts-node';
}

/** Brings the cluster up and records it in `<stateDir>/cluster.json`. */
export async function up(opts: UpOptions): Promise<ClusterInfo> {
  const log = opts.log ?? (() => {});
  const paths = clusterPaths(opts.stateDir);
  const nodeName = opts.nodeName ?? defaultNodeName();
  const bridge = opts.bridge ?? 'kvts-br0';
  const podSubnet = opts.podSubnet ?? '10.244.0.0/24';
  const nodes = opts.nodes ?? 1;
  const ipamNodes = Math.max(opts.ipamNodes ?? nodes, nodes);
  checkNodeName(nodeName);
  checkBridgeName(bridge);
  bridgeAddress(podSubnet);
  podRange(podSubnet, 1, ipamNodes);
  if (opts.maxPods !== undefined) checkMaxPods(opts.maxPods, podAddressCount(podSubnet, 1, ipamNodes));
  if (nodes > 1) {
    nodeLinks(bridge);
    checkNodeName(`${nodeName}-${nodes}`);
  }
  const imagesFile = opts.imagesFile ?? defaultImagesFile();
  const missing = missingPieces(imagesFile);
  if (missing.length) throw new Error(`cannot bring the cluster up, missing:\n  ${missing.join('\n  ')}`);
  const nodeIP = opts.nodeIP ?? interfaceIPv4('eth0');

  const previous = readInfo(opts.stateDir);
  if (previous && daemonPid(paths, 'kubelet', kubeletBin())) {
    throw new Error(`a cluster already runs in ${opts.stateDir} (node ${previous.nodeName}): run down first`);
  }
  const other = runningKubelet();
  if (other)
    throw new Error(`a kubelet already runs on this machine (pid ${other}): one kubelet per machine`);
  // Remains of a cluster that was not brought down (a crash): clean them first.
  if (previous || hasHostRecord(opts.stateDir) || leftovers(opts.stateDir, bridge).length) {
    log('cleaning up the remains of an earlier cluster');
    await down({ stateDir: opts.stateDir, bridge, log });
  }

  try {
    return await bringUp(opts.stateDir, {
      nodeName,
      nodeIP,
      bridge,
      podSubnet,
      imagesFile,
      log,
      traceLogs: opts.traceLogs ?? false,
      nodes,
      ipamNodes,
      maxPods: opts.maxPods,
    });
  } catch (err) {
    // Leave nothing half-started behind (logs/ stays for the post-mortem).
    log('up failed: bringing down what it started');
    await down({ stateDir: opts.stateDir, bridge, log }).catch(() => undefined);
    throw err;
  }
}

async function bringUp(
  stateDir: string,
  o: { maxPods?: number } & Required<
    Pick<
      UpOptions,
      | 'nodeName'
      | 'nodeIP'
      | 'bridge'
      | 'podSubnet'
      | 'imagesFile'
      | 'log'
      | 'traceLogs'
      | 'nodes'
      | 'ipamNodes'
    >
  >,
): Promise<ClusterInfo> {
  const { nodeName, nodeIP, bridge, podSubnet, imagesFile, log, traceLogs, nodes, ipamNodes, maxPods } = o;
  const paths = clusterPaths(stateDir);
  const t0 = performance.now();
  const lap = (what: string, since: number) => log(`${what}: ${Math.round(performance.now() - since)} ms`);
  // Before anything changes the host: `down` restores it from this.
  mkdirSync(stateDir, { recursive: true });
  recordHostState(stateDir);
  let t = performance.now();
  createBridge(bridge, podSubnet);
  const gateway = bridgeAddress(podSubnet).split('/')[0];
  prepareServiceRouting(bridge);
  const bridgeNetwork = writeCniConfig(paths.cni, bridge, podSubnet, podRange(podSubnet, 1, ipamNodes), {
    dst: SERVICE_CIDR,
    gw: gateway,
  });
  // Multus in front of it when built; its kubeconfig (its own user) comes once the API runs.
  const multus = prepareCniBinDir(paths.cni)
    ? {
        binary: multusBin(),
        config: writeMultusConfig(paths.cni, multusKubeconfig(paths.cni), bridgeNetwork),
      }
    : undefined;
  lap(`bridge ${bridge} (${podSubnet})${multus ? ', Multus' : ''}`, t);

  const images = readImages(imagesFile);
  t = performance.now();
  await startContainerd(paths, images.pause.ref, traceLogs ? 'info' : 'warn');
  lap('containerd', t);

  t = performance.now();
  lap(`images (${importProjectImages(paths, images)})`, t);

  t = performance.now();
  const cp = await startControlPlane({
    dir: paths.controlPlane,
    detached: true,
    realNodes: true,
    advertiseAddress: gateway,
  });
  await startApiServiceRelay(paths, gateway, Number(new URL(cp.server).port));
  // Cluster DNS before the kubelet: the first pod's resolv.conf names it.
  await startClusterDns(paths, accessTo(cp), gateway);
  // Before the kubelet: Multus answers the first pod's CNI ADD with it.
  if (multus) grantMultusAccess(cp, paths.cni);
  lap('control plane, cluster DNS', t);

  t = performance.now();
  await startKubelet(paths, accessTo(cp), nodeName, nodeIP, {
    verbosity: traceLogs ? 2 : 1,
    node: maxPods !== undefined ? { maxPods } : {},
  });
  lap(`kubelet (node ${nodeName} Ready)`, t);
  t = performance.now();
  await startKubeProxy(paths, accessTo(cp), { nodeName, podSubnet, bridgeAddress: gateway });
  lap('kube-proxy (nftables) synced', t);

  const info: ClusterInfo = {
    stateDir,
    nodeName,
    nodeIP,
    server: cp.server,
    kubeconfigPath: cp.kubeconfigPath,
    containerdSocket: containerdSocket(paths),
    bridge,
    podSubnet,
    ...(multus ? { multus } : {}),
    images: Object.fromEntries(Object.entries(images).map(([n, i]) => [n, i.ref])),
    imagesFile,
    ...(ipamNodes > 1 ? { ipamNodes } : {}),
    startedAt: new Date().toISOString(),
  };
  writeInfo(info);
  const all = nodes > 1 ? await addNodes(stateDir, nodes, { log, traceLogs }) : info;
  lap('cluster up', t0);
  return all;
}

/**
 * Adds nodes to the running cluster in `stateDir` until it has `nodes` (at most
 * {@link MAX_NODES}); its first node must have been brought up with `ipamNodes` that
 * many. Records them in cluster.json and resolves with the updated record.
 */
export async function addNodes(
  stateDir: string,
  nodes: number,
  {
    log = () => {},
    traceLogs = false,
    taints,
  }: { log?: (line: string) => void; traceLogs?: boolean; taints?: AddNodeOptions['taints'] } = {},
): Promise<ClusterInfo> {
  const info = readInfo(stateDir);
  if (!info) throw new Error(`no cluster in ${stateDir}`);
  if (nodes > MAX_NODES) throw new Error(`nodes: at most ${MAX_NODES} on one machine`);
  const have = 1 + (info.extraNodes?.length ?? 0);
  if (nodes <= have) return info;
  if ((info.ipamNodes ?? 1) < nodes)
    throw new Error(
      `the cluster in ${stateDir} was brought up for ${info.ipamNodes ?? 1} node(s): its pod addresses leave no room for more`,
    );
  const paths = clusterPaths(stateDir);
  const cp = accessTo({
    kubeconfigPath: info.kubeconfigPath,
    server: info.server,
    dir: paths.controlPlane,
    tls: {
      ca: join(paths.controlPlane, 'pki', 'ca.crt'),
      cert: join(paths.controlPlane, 'pki', 'admin.crt'),
      key: join(paths.controlPlane, 'pki', 'admin.key'),
    },
  });
  const extra = await addNode({
    stateDir,
    cp,
    nodeName: `${info.nodeName}-2`,
    bridge: info.bridge,
    podSubnet: info.podSubnet,
    firstNodeIP: info.nodeIP,
    images: readImages(info.imagesFile ?? defaultImagesFile()),
    log,
    traceLogs,
    taints,
  });
  const updated: ClusterInfo = { ...info, extraNodes: [...(info.extraNodes ?? []), extra] };
  writeInfo(updated);
  return updated;
}
