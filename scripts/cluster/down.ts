/**
 * `cluster down`: pods are deleted through the API first (so the kubelet unmounts their
 * volumes and runs CNI DEL), then the kubelet stops, leftover containers are killed with
 * ctr, the control plane and containerd stop, everything mounted under the state
 * directory is unmounted, the bridge is deleted, the kubepods cgroups removed and the
 * kernel settings the kubelet tuned written back (host-state.ts). A second node
 * (`up --nodes 2`) stops after the pods are gone, before the first node's kubelet.
 * containerd's image store (containerd/root) stays, so the next `up` imports nothing.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { stopDetachedControlPlane } from '../../test/support/kube';
import { killTasks, stopContainerd } from './containerd';
import { stopClusterDns } from './dns';
import { stopExtraNodes } from './extra-node';
import { leftovers, removeKubepodsCgroups, unmountUnder } from './host-cleanup';
import { firewallBefore, restoreHostState } from './host-state';
import { removeServiceTables, stopApiServiceRelay, stopKubeProxy } from './kube-proxy';
import { stopKubelet } from './kubelet';
import { deleteBridge } from './network';
import { clusterPaths, readInfo, waitFor } from './state';

/** Options of {@link down}. */
export interface DownOptions {
  stateDir: string;
  /** Default: the one cluster.json names, else kvts-br0. */
  bridge?: string;
  /** Also remove containerd's image store (the whole state directory). */
  purge?: boolean;
  log?: (line: string) => void;
}

/** Deletes every pod (grace 1 s) and waits until the kubelet has finished them all. */
async function deleteAllPods(kubeconfigPath: string, log: (line: string) => void): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const pods = (await core.listPodForAllNamespaces()).items;
  for (const p of pods) {
    const name = p.metadata?.name ?? '';
    const namespace = p.metadata?.namespace ?? '';
    await core.deleteNamespacedPod({ name, namespace, gracePeriodSeconds: 1 }).catch(() => undefined);
  }
  if (pods.length) log(`deleting ${pods.length} pod(s) through the API`);
  await waitFor('pods deleted by the kubelet', 90_000, async () => {
    return (await core.listPodForAllNamespaces()).items.length === 0;
  });
}

/** Brings the cluster in `stateDir` down; returns what could not be cleaned (empty when clean). */
export async function down(opts: DownOptions): Promise<string[]> {
  const log = opts.log ?? (() => {});
  const paths = clusterPaths(opts.stateDir);
  const info = readInfo(opts.stateDir);
  const bridge = opts.bridge ?? info?.bridge ?? 'kvts-br0';
  const t0 = performance.now();
  const lap = (what: string, since: number) => log(`${what}: ${Math.round(performance.now() - since)} ms`);

  let t = performance.now();
  if (info) {
    // No controller may re-create the pods being deleted.
    await stopDetachedControlPlane(paths.controlPlane, ['kube-controller-manager', 'kube-scheduler']);
    try {
      await deleteAllPods(info.kubeconfigPath, log);
    } catch (err) {
      log(
        `could not delete the pods through the API (${(err as Error).message.split('\n')[0]}): killing them`,
      );
    }
    lap('pods deleted', t);
  }
  // Nodes after the first (`up --nodes 2`), found by their records even without cluster.json.
  const stuckNodes = await stopExtraNodes(opts.stateDir, bridge, log);
  t = performance.now();
  await stopKubeProxy(paths);
  await stopKubelet(paths);
  const killed = killTasks(paths);
  lap(`kubelet stopped${killed ? `, ${killed} container(s) it left removed with ctr` : ''}`, t);
  t = performance.now();
  await stopApiServiceRelay(paths);
  await stopClusterDns(paths);
  await stopDetachedControlPlane(paths.controlPlane);
  lap('control plane stopped', t);
  t = performance.now();
  await stopContainerd(paths);
  lap('containerd stopped', t);

  t = performance.now();
  const unmounted = unmountUnder(opts.stateDir);
  deleteBridge(bridge);
  // kube-proxy's tables and the project's (kube-proxy.ts), unless up found them there.
  const tables = removeServiceTables(bridge, firewallBefore(opts.stateDir));
  const stuck = removeKubepodsCgroups();
  // The kubelet's kernel settings back as up found them; its firewall chains, if any.
  const changed = restoreHostState(opts.stateDir);
  lap(
    `host cleaned (${unmounted} mount(s), bridge ${bridge}, ${tables.length} nftables table(s), kubepods cgroups, kernel settings)`,
    t,
  );

  if (opts.purge) {
    rmSync(opts.stateDir, { recursive: true, force: true });
  } else {
    for (const d of [
      paths.controlPlane,
      paths.kubelet,
      paths.cni,
      paths.pids,
      paths.info,
      join(opts.stateDir, 'kube-proxy'),
    ]) {
      rmSync(d, { recursive: true, force: true });
    }
    rmSync(join(paths.containerd, 'state'), { recursive: true, force: true });
  }
  lap('cluster down', t0);
  return [...leftovers(opts.stateDir, bridge), ...stuck, ...stuckNodes, ...changed];
}
