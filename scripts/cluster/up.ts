/**
 * `cluster up`: a real one-node Kubernetes cluster from an empty state. Order: the pod
 * bridge and CNI config, containerd (and the project's images imported into it), the
 * control plane (test/support/kube.ts's startControlPlane, detached, serving real
 * kubelets), then the kubelet, until its Node is Ready.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cacheDir } from '../../test/support/integration';
import {
  accessTo,
  available as controlPlaneBuilt,
  kubeBinDir,
  startControlPlane,
} from '../../test/support/kube';
import { CONTAINERD_BIN, containerdSocket, ctr, imageRefs, importImage, startContainerd } from './containerd';
import { down } from './down';
import { leftovers } from './host-cleanup';
import { hasHostRecord, recordHostState } from './host-state';
import { checkNodeName, kubeletBin, runningKubelet, startKubelet } from './kubelet';
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
import { type ClusterInfo, clusterPaths, daemonPid, readInfo } from './state';

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
}

/** An image built by scripts/images/build.sh. */
interface BuiltImage {
  ref: string;
  layout: string;
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
  checkNodeName(nodeName);
  checkBridgeName(bridge);
  bridgeAddress(podSubnet);
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
  o: Required<
    Pick<UpOptions, 'nodeName' | 'nodeIP' | 'bridge' | 'podSubnet' | 'imagesFile' | 'log' | 'traceLogs'>
  >,
): Promise<ClusterInfo> {
  const { nodeName, nodeIP, bridge, podSubnet, imagesFile, log, traceLogs } = o;
  const paths = clusterPaths(stateDir);
  const t0 = performance.now();
  const lap = (what: string, since: number) => log(`${what}: ${Math.round(performance.now() - since)} ms`);
  // Before anything changes the host: `down` restores it from this.
  mkdirSync(stateDir, { recursive: true });
  recordHostState(stateDir);
  let t = performance.now();
  createBridge(bridge, podSubnet);
  const bridgeNetwork = writeCniConfig(paths.cni, bridge, podSubnet);
  // Multus in front of it when built; its kubeconfig (its own user) comes once the API runs.
  const multus = prepareCniBinDir(paths.cni)
    ? {
        binary: multusBin(),
        config: writeMultusConfig(paths.cni, multusKubeconfig(paths.cni), bridgeNetwork),
      }
    : undefined;
  lap(`bridge ${bridge} (${podSubnet})${multus ? ', Multus' : ''}`, t);

  const images = JSON.parse(readFileSync(imagesFile, 'utf8')) as Record<string, BuiltImage>;
  if (!images.pause) throw new Error(`${imagesFile}: no pause image`);
  t = performance.now();
  await startContainerd(paths, images.pause.ref, traceLogs ? 'info' : 'warn');
  lap('containerd', t);

  t = performance.now();
  const present = imageRefs(paths);
  const imported: string[] = [];
  for (const [name, image] of Object.entries(images)) {
    if (importImage(paths, image.ref, image.layout, present)) imported.push(name);
    // A stable name for manifests, next to the content-keyed one.
    ctr(paths, ['images', 'tag', '--force', image.ref, `localhost/kubevirt-ts/${name}:latest`]);
  }
  // Older builds of the project's images: drop them (containerd then frees their content).
  const current = new Set(Object.values(images).map((i) => i.ref));
  const stale = [...present].filter(
    (r) => /^localhost\/kubevirt-ts\/[^:]+:[0-9a-f]{16}$/.test(r) && !current.has(r),
  );
  if (stale.length) ctr(paths, ['images', 'remove', ...stale]);
  lap(`images (imported: ${imported.join(', ') || 'none, all present'}; ${stale.length} stale removed)`, t);

  t = performance.now();
  const cp = await startControlPlane({ dir: paths.controlPlane, detached: true, realNodes: true });
  // Before the kubelet: Multus answers the first pod's CNI ADD with it.
  if (multus) grantMultusAccess(cp, paths.cni);
  lap('control plane', t);

  t = performance.now();
  await startKubelet(paths, accessTo(cp), nodeName, nodeIP, { verbosity: traceLogs ? 2 : 1 });
  lap(`kubelet (node ${nodeName} Ready)`, t);

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
    startedAt: new Date().toISOString(),
  };
  writeFileSync(paths.info, `${JSON.stringify(info, null, 2)}\n`);
  lap('cluster up', t0);
  return info;
}
