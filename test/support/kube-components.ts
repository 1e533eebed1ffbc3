/**
 * The processes of a test control plane ({@link ./kube}): the binaries, each component's
 * command line, and starting, stopping and waiting for them (attached to this process, or
 * detached with pid files for the one-node cluster of scripts/cluster).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { cacheDir, integration } from './integration';
import { FRONT_PROXY_CLIENT } from './kube-pki';
import { isOurProcess, terminate } from './processes';

/** Where scripts/kube/build.sh puts the binaries (`current` points at the pinned version). */
export const kubeBinDir = process.env.KUBEVIRT_TS_KUBE_BIN ?? join(cacheDir, 'kube', 'current', 'bin');

const BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const;

/** True when every control-plane binary exists. */
export function available(): boolean {
  return BINARIES.every((b) => existsSync(join(kubeBinDir, b)));
}

/** Why the control-plane tests skip when {@link available} is false. */
export const unavailableReason = `the Kubernetes control plane is not built (${kubeBinDir}): run scripts/setup-host.sh --with-kube (needs Go)`;

/** The kubectl built beside the control plane. */
export const kubectlPath = join(kubeBinDir, 'kubectl');

/**
 * The gate of a test on its own kube-apiserver driven with kubectl: true when the control
 * plane and kubectl are built; else skips (or fails under the README's test command)
 * through {@link integration}, naming `name`.
 */
export function apiserverTestsEnabled(name: string): boolean {
  const ready = available() && existsSync(kubectlPath);
  return integration(name, ready, ready ? '' : unavailableReason);
}

/** One component: its binary's name (in {@link kubeBinDir}), arguments and running process. */
export interface Component {
  name: string;
  args: string[];
  proc?: ChildProcess;
  exited?: Promise<void>;
}

/** Components started by this process, for cleanup at exit. */
const liveComponents = new Set<Component>();
// A process that ends without stop() (a crash, a forgotten stop) leaves no server behind.
process.once('exit', () => {
  for (const c of liveComponents) c.proc?.kill('SIGKILL');
});

/** Starts `c`, logging to `<logDir>/<name>.log`; detached, it also writes `<logDir>/../pids/<name>.pid`. */
export function startComponent(c: Component, logDir: string, detached = false): void {
  const log = openSync(join(logDir, `${c.name}.log`), 'a');
  const proc = spawn(join(kubeBinDir, c.name), c.args, { stdio: ['ignore', log, log], detached });
  closeSync(log);
  c.proc = proc;
  if (detached) {
    proc.unref();
    const pids = join(logDir, '..', 'pids');
    mkdirSync(pids, { recursive: true });
    writeFileSync(join(pids, `${c.name}.pid`), `${proc.pid}\n`);
  } else {
    liveComponents.add(c);
  }
  c.exited = new Promise((resolve) =>
    proc.once('exit', () => {
      liveComponents.delete(c);
      resolve();
    }),
  );
}

/** SIGTERM, then SIGKILL after 3 s; resolves when `c` has exited. */
export async function stopComponent(c: Component): Promise<void> {
  const proc = c.proc;
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
  proc.kill('SIGTERM');
  // kube-apiserver sometimes lingers ~15 s after its graceful shutdown finished (while the
  // controller manager and scheduler still hold watches); its state is in etcd, so a
  // short grace loses nothing.
  const killer = setTimeout(() => proc.kill('SIGKILL'), 3_000);
  await c.exited;
  clearTimeout(killer);
}

/** The last 30 lines of a component's log in `dir`, for errors. */
export function logTail(dir: string, name: string): string {
  try {
    return readFileSync(join(dir, 'logs', `${name}.log`), 'utf8')
      .split('\n')
      .slice(-30)
      .join('\n');
  } catch {
    return '(no log)';
  }
}

/** Polls `check` every 200 ms until it is true, `alive` names a death, or the time is up. */
export async function waitUntil(
  what: string,
  timeoutMs: number,
  check: () => Promise<boolean>,
  alive: () => string | undefined,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    const dead = alive();
    if (dead) throw new Error(`${what}: ${dead}`);
    if (Date.now() > deadline) throw new Error(`${what}: not ready after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The components in start order, as their pid files name them. */
const COMPONENT_ORDER = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'];

/**
 * Stops the components of a control plane started with `detached: true` in `dir` (from any
 * process): SIGTERM in reverse start order, SIGKILL after 3 s, then removes the pid files.
 * `only` limits it to some components (e.g. the controller manager before pods are
 * deleted, so no controller re-creates them).
 */
export async function stopDetachedControlPlane(dir: string, only?: string[]): Promise<void> {
  const pidDir = join(dir, 'pids');
  if (!existsSync(pidDir)) return;
  const names = readdirSync(pidDir)
    .filter((f) => f.endsWith('.pid'))
    .map((f) => f.slice(0, -4))
    .filter((n) => !only || only.includes(n))
    .sort((a, b) => COMPONENT_ORDER.indexOf(b) - COMPONENT_ORDER.indexOf(a));
  for (const name of names) {
    const file = join(pidDir, `${name}.pid`);
    const pid = Number.parseInt(readFileSync(file, 'utf8'), 10);
    if (isOurProcess(pid, join(kubeBinDir, name))) await terminate(pid);
    rmSync(file, { force: true });
  }
}

/** Where {@link controlPlaneComponents} puts a control plane's parts. */
export interface ComponentLayout {
  /** The working directory (kubeconfigs, etcd data). */
  dir: string;
  /** The certificates ({@link ./kube-pki}). */
  pki: string;
  etcdPort: number;
  etcdPeerPort: number;
  apiPort: number;
  /** Serve real kubelets (see ControlPlaneOptions.realNodes). */
  realNodes: boolean;
  /** The `kubernetes` Service's endpoint address (see ControlPlaneOptions.advertiseAddress). */
  advertiseAddress?: string;
}

/**
 * The ClusterIP range of a control plane serving real kubelets: kube-proxy runs there
 * (scripts/cluster/kube-proxy.ts) and forwards these addresses to endpoints on this
 * machine; each node routes the range onto its own pod bridge, never off the machine.
 */
export const REAL_NODES_SERVICE_CIDR = '10.96.0.0/24';
/** The `kubernetes` Service's ClusterIP in {@link REAL_NODES_SERVICE_CIDR}. */
export const REAL_NODES_KUBERNETES_IP = '10.96.0.1';
/** The `kube-dns` Service's ClusterIP (scripts/cluster/dns.ts), the nodes' `clusterDNS`. */
export const REAL_NODES_CLUSTER_DNS_IP = '10.96.0.10';

/** The four components with their command lines; none started. */
export function controlPlaneComponents(layout: ComponentLayout): {
  etcd: Component;
  apiserver: Component;
  controllerManager: Component;
  scheduler: Component;
} {
  const { dir, pki, etcdPort, etcdPeerPort, apiPort, realNodes, advertiseAddress } = layout;
  const ca = join(pki, 'ca.crt');
  const etcd: Component = {
    name: 'etcd',
    args: [
      '--name=default',
      `--data-dir=${join(dir, 'etcd')}`,
      `--listen-client-urls=http://127.0.0.1:${etcdPort}`,
      `--advertise-client-urls=http://127.0.0.1:${etcdPort}`,
      `--listen-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-advertise-peer-urls=http://127.0.0.1:${etcdPeerPort}`,
      `--initial-cluster=default=http://127.0.0.1:${etcdPeerPort}`,
      // Test data is thrown away: skip fsync, the slowest part of etcd on a busy disk.
      '--unsafe-no-fsync',
      '--log-level=warn',
    ],
  };
  const apiserver: Component = {
    name: 'kube-apiserver',
    args: [
      `--etcd-servers=http://127.0.0.1:${etcdPort}`,
      '--bind-address=127.0.0.1',
      // The `kubernetes` Service's endpoint: pods reach the API server there (a relay on the
      // pod bridge's address, scripts/cluster/kube-proxy.ts) through its ClusterIP.
      `--advertise-address=${advertiseAddress ?? '127.0.0.1'}`,
      `--secure-port=${apiPort}`,
      `--cert-dir=${pki}`,
      `--tls-cert-file=${join(pki, 'apiserver.crt')}`,
      `--tls-private-key-file=${join(pki, 'apiserver.key')}`,
      `--client-ca-file=${ca}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${join(pki, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(pki, 'sa.key')}`,
      // Without real nodes, ClusterIPs from the loopback range: no kube-proxy runs, the API
      // server dials a webhook's or an aggregated API's Service at its ClusterIP, and an
      // address from a private range would leave this machine; on loopback a call with
      // nothing behind it is refused right here. With real nodes kube-proxy serves them.
      `--service-cluster-ip-range=${realNodes ? REAL_NODES_SERVICE_CIDR : '127.100.0.0/24'}`,
      '--authorization-mode=Node,RBAC',
      '--allow-privileged=true',
      ...(realNodes
        ? [
            '--enable-admission-plugins=NodeRestriction',
            `--kubelet-client-certificate=${join(pki, 'apiserver-kubelet-client.crt')}`,
            `--kubelet-client-key=${join(pki, 'apiserver-kubelet-client.key')}`,
            '--kubelet-preferred-address-types=InternalIP,Hostname',
            // kube-proxy runs on the nodes, not beside the API server's own connections (the
            // host's OUTPUT hook would DNAT them, but the API server may start first): it
            // calls a webhook's or the APIService's Service at one of its endpoints (the
            // pod's address: the node's own or the pod bridge's), not at the ClusterIP.
            '--enable-aggregator-routing=true',
          ]
        : // Pods here never reach a kubelet: the ServiceAccount admission plugin would only
          // race the controller manager's creation of each namespace's default account.
          ['--disable-admission-plugins=ServiceAccount']),
      '--profiling=false',
      // The aggregation layer, for aggregated API servers (virt-api's subresources.kubevirt.io).
      `--requestheader-client-ca-file=${join(pki, 'front-proxy', 'ca.crt')}`,
      `--requestheader-allowed-names=${FRONT_PROXY_CLIENT}`,
      '--requestheader-username-headers=X-Remote-User',
      '--requestheader-group-headers=X-Remote-Group',
      '--requestheader-extra-headers-prefix=X-Remote-Extra-',
      `--proxy-client-cert-file=${join(pki, 'front-proxy', 'front-proxy-client.crt')}`,
      `--proxy-client-key-file=${join(pki, 'front-proxy', 'front-proxy-client.key')}`,
      '--v=1',
    ],
  };
  const controllerManager: Component = {
    name: 'kube-controller-manager',
    args: [
      `--kubeconfig=${join(dir, 'controller-manager.kubeconfig')}`,
      '--leader-elect=false',
      '--secure-port=0',
      // As upstream clusters run it: each controller acts as its own service account with
      // the system:controller:* RBAC roles (the manager's own identity may not delete
      // arbitrary objects, so the garbage collector would fail).
      '--use-service-account-credentials=true',
      `--service-account-private-key-file=${join(pki, 'sa.key')}`,
      `--root-ca-file=${ca}`,
      // Every default controller (garbage collector included); without real kubelets not
      // node lifecycle: tests register Nodes with no kubelet, which it would taint
      // unreachable and evict.
      realNodes ? '--controllers=*' : '--controllers=*,-node-lifecycle-controller',
      '--v=1',
    ],
  };
  const scheduler: Component = {
    name: 'kube-scheduler',
    args: [
      `--kubeconfig=${join(dir, 'scheduler.kubeconfig')}`,
      '--leader-elect=false',
      '--secure-port=0',
      '--v=1',
    ],
  };
  return { etcd, apiserver, controllerManager, scheduler };
}
