/**
 * `npm run cluster -- up|down|status [options]`: a real one-node (or two-node) Kubernetes
 * cluster on this machine (see docs/cluster.md). State lives in --state-dir (default
 * $KUBEVIRT_TS_CLUSTER_DIR or /var/lib/kubevirt-ts-cluster).
 *
 *   up      [--nodes 1|2] [--node-name N] [--node-ip IP] [--bridge NAME] [--pod-subnet A.B.C.0/24]
 *           [--max-pods N]   (the first node's kubelet pod limit; default the kubelet's 110)
 *           (ends with `export KUBECONFIG=...` and `export PATH=<kubectl's dir>:$PATH` lines)
 *   down    [--purge]   (--purge also drops containerd's image store)
 *   status
 */

import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { accessTo, kubeBinDir } from '../../test/support/kube';
import { CONTAINERD_BIN, containerdSocket } from './containerd';
import { down } from './down';
import { leftovers } from './host-cleanup';
import { kubeletBin } from './kubelet';
import { clusterPaths, DEFAULT_STATE_DIR, daemonPid, readInfo } from './state';
import { up } from './up';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    'state-dir': { type: 'string' },
    'node-name': { type: 'string' },
    'node-ip': { type: 'string' },
    bridge: { type: 'string' },
    'pod-subnet': { type: 'string' },
    purge: { type: 'boolean' },
    nodes: { type: 'string' },
    'max-pods': { type: 'string' },
  },
});
const stateDir = values['state-dir'] ?? process.env.KUBEVIRT_TS_CLUSTER_DIR ?? DEFAULT_STATE_DIR;
const log = (line: string) => console.log(`[cluster] ${line}`);

async function status(): Promise<number> {
  const info = readInfo(stateDir);
  const paths = clusterPaths(stateDir);
  if (!info) {
    const left = leftovers(stateDir, 'kvts-br0');
    console.log(`no cluster in ${stateDir}${left.length ? `; leftovers: ${left.join(', ')}` : ''}`);
    return 1;
  }
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
  const ready = await cp.get('/readyz').then(
    (r) => r.status === 200,
    () => false,
  );
  const nodeReady = (name: string) =>
    cp.get(`/api/v1/nodes/${name}`).then(
      (r) =>
        r.status === 200 &&
        ((
          JSON.parse(r.body) as { status?: { conditions?: { type: string; status: string }[] } }
        ).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ??
          false),
      () => false,
    );
  const daemons = {
    containerd: daemonPid(paths, 'containerd', CONTAINERD_BIN),
    kubelet: daemonPid(paths, 'kubelet', kubeletBin()),
  };
  console.log(`state dir:   ${stateDir}`);
  console.log(`server:      ${info.server} (${ready ? 'ready' : 'NOT ready'})`);
  console.log(`kubeconfig:  ${info.kubeconfigPath}`);
  const firstReady = await nodeReady(info.nodeName);
  console.log(`kubectl:     ${join(kubeBinDir, 'kubectl')}`);
  console.log(`node:        ${info.nodeName} ${info.nodeIP} (${firstReady ? 'Ready' : 'NOT Ready'})`);
  console.log(
    `containerd:  ${containerdSocket(paths)} (${daemons.containerd ? `pid ${daemons.containerd}` : 'NOT running'})`,
  );
  console.log(`kubelet:     ${daemons.kubelet ? `pid ${daemons.kubelet}` : 'NOT running'}`);
  console.log(`pod network: ${info.bridge} ${info.podSubnet}`);
  let extraOk = true;
  for (const n of info.extraNodes ?? []) {
    const p = clusterPaths(n.dir);
    const up = {
      ready: await nodeReady(n.nodeName),
      containerd: daemonPid(p, 'containerd', CONTAINERD_BIN),
      kubelet: daemonPid(p, 'kubelet', kubeletBin()),
    };
    extraOk &&= up.ready && !!up.containerd && !!up.kubelet;
    console.log(
      `node:        ${n.nodeName} ${n.nodeIP} (${up.ready ? 'Ready' : 'NOT Ready'}; own namespaces, holder pid ${n.holderPid}, cgroup root ${n.cgroupRoot}, pods ${n.podRange.start}-${n.podRange.end})`,
    );
    console.log(
      `  containerd ${n.containerdSocket} (${up.containerd ? `pid ${up.containerd}` : 'NOT running'}), kubelet ${up.kubelet ? `pid ${up.kubelet}` : 'NOT running'}`,
    );
  }
  for (const [name, ref] of Object.entries(info.images)) console.log(`image:       ${name} = ${ref}`);
  return ready && firstReady && extraOk && daemons.containerd && daemons.kubelet ? 0 : 1;
}

/** `--max-pods`: digits only (up() checks the range against the node's pod addresses). */
function maxPods(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[0-9]{1,5}$/.test(value)) throw new Error(`--max-pods ${JSON.stringify(value)}: expected a number`);
  return Number(value);
}

function nodeCount(value: string | undefined): number {
  if (value === undefined) return 1;
  if (value !== '1' && value !== '2') throw new Error(`--nodes ${JSON.stringify(value)}: expected 1 or 2`);
  return Number(value);
}

async function main(): Promise<number> {
  switch (positionals[0]) {
    case 'up': {
      const info = await up({
        stateDir,
        nodeName: values['node-name'],
        nodeIP: values['node-ip'],
        bridge: values.bridge,
        podSubnet: values['pod-subnet'],
        nodes: nodeCount(values.nodes),
        maxPods: maxPods(values['max-pods']),
        log,
      });
      // Paste-able: kubectl is not on PATH; it was built with the control plane.
      console.log(`# API server ${info.server} (a new port at every up)`);
      console.log(`export KUBECONFIG=${info.kubeconfigPath}`);
      console.log(`export PATH=${kubeBinDir}:$PATH`);
      return 0;
    }
    case 'down': {
      const left = await down({ stateDir, bridge: values.bridge, purge: values.purge, log });
      if (left.length) {
        console.error(`left behind:\n  ${left.join('\n  ')}`);
        return 1;
      }
      return 0;
    }
    case 'status':
      return status();
    default:
      console.error('usage: npm run cluster -- up|down|status [--state-dir DIR] (see docs/cluster.md)');
      return 2;
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`[cluster] error: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  },
);
