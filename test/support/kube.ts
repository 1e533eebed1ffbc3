/**
 * A real Kubernetes control plane for integration tests and for the one-node cluster of
 * scripts/cluster (the one way the project starts one): etcd, kube-apiserver (RBAC on),
 * kube-controller-manager (garbage collector on) and kube-scheduler, built by
 * scripts/kube/build.sh and started on loopback with freshly generated certificates.
 *
 * Most tests use {@link sharedControlPlane}: one control plane per vitest run, started on
 * first use by the global setup (test/support/kube-global-setup.ts). A test that restarts
 * or breaks the API server starts its own with {@link startControlPlane}.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { request } from 'node:https';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { cacheDir } from './integration';
import { isOurProcess, terminate } from './processes';

export { isOurProcess, terminate };

/** Where scripts/kube/build.sh puts the binaries (`current` points at the pinned version). */
export const kubeBinDir = process.env.KUBEVIRT_TS_KUBE_BIN ?? join(cacheDir, 'kube', 'current', 'bin');

const BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'] as const;

/** True when every control-plane binary exists. */
export function available(): boolean {
  return BINARIES.every((b) => existsSync(join(kubeBinDir, b)));
}

/** Why the control-plane tests skip when {@link available} is false. */
export const unavailableReason = `the Kubernetes control plane is not built (${kubeBinDir}): run scripts/setup-host.sh --with-kube (needs Go)`;

/** Where a control plane listens and the files to reach it; plain data, shared across processes. */
export interface ControlPlaneEndpoint {
  /** Kubeconfig of a cluster admin (group system:masters). */
  kubeconfigPath: string;
  /** https://127.0.0.1:<port> */
  server: string;
  /** Working directory: certificates (pki/), kubeconfigs, etcd data, component logs (logs/). */
  dir: string;
  /** The cluster CA, and the admin's client certificate and key, as PEM file paths. */
  tls: { ca: string; cert: string; key: string };
}

/** A control plane a test may use but not stop or restart (the shared one). */
export interface ControlPlaneAccess extends ControlPlaneEndpoint {
  /** Issues a client certificate for `user` in `groups` and returns a kubeconfig for it. */
  kubeconfigFor(user: string, groups?: string[]): string;
  /** GET a path on the API server as admin; resolves with status and body. */
  get(path: string): Promise<{ status: number; body: string }>;
}

/** A control plane this test owns. */
export interface ControlPlane extends ControlPlaneAccess {
  /** Stops kube-apiserver and starts it again on the same port and etcd; waits for /readyz. */
  restartApiServer(): Promise<void>;
  /** Stops every component and removes the working directory (unless `keepDir`). */
  stop(): Promise<void>;
}

/** Options of {@link startControlPlane}. */
export interface ControlPlaneOptions {
  /** Working directory; a fresh temporary one by default. */
  dir?: string;
  /** Start kube-controller-manager (default true). */
  controllerManager?: boolean;
  /** Start kube-scheduler (default true). */
  scheduler?: boolean;
  /** Keep `dir` after stop (for debugging; default false). */
  keepDir?: boolean;
  /** How long to wait for each component to become ready (default 120 s). */
  readyTimeoutMs?: number;
  /**
   * Start the components as daemons that outlive this process (the one-node cluster of
   * scripts/cluster): each writes `<dir>/pids/<name>.pid`; {@link stopDetachedControlPlane}
   * stops them from any process. Default false: they die with this process.
   */
  detached?: boolean;
  /**
   * Serve real kubelets (default false): the apiserver gets a client certificate for the
   * kubelets' APIs and reaches them by InternalIP, the ServiceAccount and NodeRestriction
   * admission plugins are on, and the controller manager runs the node lifecycle
   * controller. Off, Nodes registered by {@link registerReadyNode} stand in for kubelets.
   */
  realNodes?: boolean;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Names in certificate subjects come from tests: keep them to a safe alphabet. */
function checkSubjectName(what: string, value: string): void {
  if (!/^[A-Za-z0-9:._@-]{1,128}$/.test(value)) {
    throw new Error(`${what} ${JSON.stringify(value)}: use [A-Za-z0-9:._@-], 1-128 chars`);
  }
}

/** Issues a certificate signed by the CA in `pki`; EC P-256 keys are quick to make. */
function issueCert(pki: string, name: string, cn: string, orgs: string[], ext: string): void {
  checkSubjectName('certificate common name', cn);
  for (const o of orgs) checkSubjectName('certificate organization', o);
  const subj = `${orgs.map((o) => `/O=${o}`).join('')}/CN=${cn}`;
  openssl(
    [
      'req',
      '-new',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      subj,
    ],
    pki,
  );
  writeFileSync(join(pki, `${name}.ext`), ext);
  openssl(
    [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '3650',
      '-out',
      `${name}.crt`,
      '-extfile',
      `${name}.ext`,
    ],
    pki,
  );
}

const CLIENT_EXT = 'keyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n';
/** Common name of the front proxy's client certificate (the only allowed request-header name). */
const FRONT_PROXY_CLIENT = 'front-proxy-client';

function writeKubeconfig(path: string, server: string, pki: string, name: string): void {
  // Paths are ours (a temp dir), so they are safe to place in YAML as quoted strings.
  const q = (s: string) => JSON.stringify(s);
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters:
- name: kubevirt-ts-test
  cluster:
    server: ${q(server)}
    certificate-authority: ${q(join(pki, 'ca.crt'))}
users:
- name: ${q(name)}
  user:
    client-certificate: ${q(join(pki, `${name}.crt`))}
    client-key: ${q(join(pki, `${name}.key`))}
contexts:
- name: kubevirt-ts-test
  context:
    cluster: kubevirt-ts-test
    user: ${q(name)}
current-context: kubevirt-ts-test
`,
  );
}

function makePki(pki: string, realNodes: boolean): void {
  mkdirSync(pki, { recursive: true });
  openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '3650',
      '-subj',
      '/CN=kubevirt-ts-test-ca',
    ],
    pki,
  );
  issueCert(
    pki,
    'apiserver',
    'kube-apiserver',
    [],
    'keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' +
      'subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,' +
      'DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n',
  );
  issueCert(pki, 'admin', 'kubevirt-ts-admin', ['system:masters'], CLIENT_EXT);
  issueCert(pki, 'controller-manager', 'system:kube-controller-manager', [], CLIENT_EXT);
  issueCert(pki, 'scheduler', 'system:kube-scheduler', [], CLIENT_EXT);
  // The apiserver's identity towards kubelets (logs, exec, port-forward).
  if (realNodes)
    issueCert(
      pki,
      'apiserver-kubelet-client',
      'kube-apiserver-kubelet-client',
      ['system:masters'],
      CLIENT_EXT,
    );
  // The aggregation layer's front proxy: its own CA (requestheader-client-ca) and the
  // client certificate kube-apiserver presents to aggregated API servers such as virt-api.
  const fp = join(pki, 'front-proxy');
  mkdirSync(fp, { recursive: true });
  openssl(
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '3650',
      '-subj',
      '/CN=kubevirt-ts-test-front-proxy-ca',
    ],
    fp,
  );
  issueCert(fp, 'front-proxy-client', FRONT_PROXY_CLIENT, [], CLIENT_EXT);
  // The service-account token signing key pair.
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'sa.key'], pki);
  openssl(['ec', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], pki);
}

interface Component {
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

function startComponent(c: Component, logDir: string, detached = false): void {
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

async function stopComponent(c: Component): Promise<void> {
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

function logTail(dir: string, name: string): string {
  try {
    return readFileSync(join(dir, 'logs', `${name}.log`), 'utf8')
      .split('\n')
      .slice(-30)
      .join('\n');
  } catch {
    return '(no log)';
  }
}

async function waitUntil(
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

/**
 * Starts etcd, kube-apiserver, kube-controller-manager and kube-scheduler on loopback
 * with fresh certificates, and waits until the API server's /readyz answers ok and the
 * controller manager has created the `default` service account (its controllers run).
 */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  if (!available()) throw new Error(unavailableReason);
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'kvts-kube-'));
  const readyTimeoutMs = opts.readyTimeoutMs ?? 120_000;
  const pki = join(dir, 'pki');
  const logs = join(dir, 'logs');
  const realNodes = opts.realNodes === true;
  const detached = opts.detached === true;
  mkdirSync(logs, { recursive: true });
  makePki(pki, realNodes);

  const [etcdPort, etcdPeerPort, apiPort] = [await freePort(), await freePort(), await freePort()];
  const server = `https://127.0.0.1:${apiPort}`;
  const kubeconfigPath = join(dir, 'admin.kubeconfig');
  writeKubeconfig(kubeconfigPath, server, pki, 'admin');
  writeKubeconfig(join(dir, 'controller-manager.kubeconfig'), server, pki, 'controller-manager');
  writeKubeconfig(join(dir, 'scheduler.kubeconfig'), server, pki, 'scheduler');
  const tls = { ca: join(pki, 'ca.crt'), cert: join(pki, 'admin.crt'), key: join(pki, 'admin.key') };

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
      '--advertise-address=127.0.0.1',
      `--secure-port=${apiPort}`,
      `--cert-dir=${pki}`,
      `--tls-cert-file=${join(pki, 'apiserver.crt')}`,
      `--tls-private-key-file=${join(pki, 'apiserver.key')}`,
      `--client-ca-file=${tls.ca}`,
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${join(pki, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(pki, 'sa.key')}`,
      // ClusterIPs from the loopback range: with no kube-proxy, the API server dials a
      // webhook's or an aggregated API's Service at its ClusterIP, and an address from a
      // private range would leave this machine; on loopback a call with nothing behind it
      // is refused right here.
      '--service-cluster-ip-range=127.100.0.0/24',
      '--authorization-mode=Node,RBAC',
      '--allow-privileged=true',
      ...(realNodes
        ? [
            '--enable-admission-plugins=NodeRestriction',
            `--kubelet-client-certificate=${join(pki, 'apiserver-kubelet-client.crt')}`,
            `--kubelet-client-key=${join(pki, 'apiserver-kubelet-client.key')}`,
            '--kubelet-preferred-address-types=InternalIP,Hostname',
            // No kube-proxy: the API server calls a webhook's or the APIService's Service at
            // one of its endpoints (the pod's address: the node's own or the pod bridge's),
            // not at the ClusterIP, which nothing would forward.
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
      `--root-ca-file=${tls.ca}`,
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
  const components = [etcd, apiserver];
  if (opts.controllerManager !== false) components.push(controllerManager);
  if (opts.scheduler !== false) components.push(scheduler);

  const get = (path: string) => httpsGet(server, tls, path);
  const deadWhy = (c: Component) => () =>
    c.proc && c.proc.exitCode !== null
      ? `${c.name} exited with ${c.proc.exitCode}:\n${logTail(dir, c.name)}`
      : undefined;
  const waitApiReady = () =>
    waitUntil(
      `kube-apiserver at ${server}`,
      readyTimeoutMs,
      async () => (await get('/readyz')).status === 200,
      deadWhy(apiserver),
    );

  const stop = async () => {
    for (const c of [...components].reverse()) await stopComponent(c);
    if (!opts.keepDir && !opts.dir) rmSync(dir, { recursive: true, force: true });
  };
  try {
    startComponent(etcd, logs, detached);
    startComponent(apiserver, logs, detached);
    await waitApiReady();
    for (const c of components.slice(2)) startComponent(c, logs, detached);
    if (opts.controllerManager !== false) {
      await waitUntil(
        'kube-controller-manager (default service account)',
        readyTimeoutMs,
        async () => (await get('/api/v1/namespaces/default/serviceaccounts/default')).status === 200,
        deadWhy(controllerManager),
      );
    }
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    ...accessTo({ kubeconfigPath, server, dir, tls }),
    async restartApiServer() {
      await stopComponent(apiserver);
      startComponent(apiserver, logs, detached);
      await waitApiReady();
    },
    stop,
  };
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

/** Helpers (admin GET, per-user kubeconfigs) for a control plane known by its endpoint. */
export function accessTo(endpoint: ControlPlaneEndpoint): ControlPlaneAccess {
  const pki = join(endpoint.dir, 'pki');
  return {
    ...endpoint,
    get: (path: string) => httpsGet(endpoint.server, endpoint.tls, path),
    kubeconfigFor(user: string, groups: string[] = []): string {
      // Unique file names: two test files may ask for the same user at once.
      const name = `user-${user.replace(/[^A-Za-z0-9]/g, '_')}-${process.pid}-${++userSerial}`;
      issueCert(pki, name, user, groups, CLIENT_EXT);
      const path = join(endpoint.dir, `${name}.kubeconfig`);
      writeKubeconfig(path, endpoint.server, pki, name);
      return path;
    },
  };
}
let userSerial = 0;

/** Set by the global setup: the URL its control-plane broker listens on. */
export const SHARED_BROKER_ENV = 'KUBEVIRT_TS_KUBE_BROKER';
let shared: Promise<ControlPlaneAccess> | undefined;

/**
 * The control plane shared by every test file of this run: started on first use by the
 * global setup's broker (so runs that need no API server never start one) and stopped at
 * the end of the run. Do not restart or break it; start your own for that. Without the
 * global setup (another vitest config), it starts one for this process instead.
 */
export function sharedControlPlane(): Promise<ControlPlaneAccess> {
  if (!shared) {
    const broker = process.env[SHARED_BROKER_ENV];
    shared = broker ? fromBroker(broker) : ownForThisProcess();
  }
  return shared;
}

async function fromBroker(broker: string): Promise<ControlPlaneAccess> {
  const res = await fetch(`${broker}/control-plane`);
  const text = await res.text();
  if (!res.ok) throw new Error(`shared control plane: ${text}`);
  return accessTo(JSON.parse(text) as ControlPlaneEndpoint);
}

async function ownForThisProcess(): Promise<ControlPlaneAccess> {
  const cp = await startControlPlane();
  process.once('exit', () => rmSync(cp.dir, { recursive: true, force: true }));
  return cp;
}

/** GET over TLS with the admin client certificate. */
function httpsGet(
  server: string,
  tls: { ca: string; cert: string; key: string },
  path: string,
): Promise<{ status: number; body: string }> {
  const ca = readFileSync(tls.ca);
  const cert = readFileSync(tls.cert);
  const key = readFileSync(tls.key);
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, server), { ca, cert, key, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: timeout`)));
    req.on('error', reject);
    req.end();
  });
}

/** Options of {@link registerReadyNode}. */
export interface ReadyNodeOptions {
  labels?: Record<string, string>;
  /** Capacity and allocatable (default cpu 4, memory 8Gi, pods 110). */
  capacity?: Record<string, string>;
}

/**
 * Registers a Node the scheduler will bind pods to, standing in for a kubelet: creates it
 * (or takes the existing one), reports it Ready with the given capacity, and removes the
 * `node.kubernetes.io/not-ready` taint the TaintNodesByCondition admission plugin put on
 * it (the node lifecycle controller, which would remove it, is off in these control
 * planes). Nothing renews the Ready condition, and nothing needs to.
 */
export async function registerReadyNode(
  kubeconfigPath: string,
  name: string,
  opts: ReadyNodeOptions = {},
): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfigPath);
  const core = kc.makeApiClient(CoreV1Api);
  const capacity = opts.capacity ?? { cpu: '4', memory: '8Gi', pods: '110' };
  try {
    await core.createNode({
      body: { metadata: { name, labels: { 'kubernetes.io/hostname': name, ...opts.labels } } },
    });
  } catch (err) {
    if ((err as { code?: number }).code !== 409) throw err;
  }
  const now = new Date();
  // Controllers (ttl, the scheduler's cache) touch new nodes too: re-read on conflict.
  await retryOnConflict(async () => {
    const current = await core.readNode({ name });
    await core.replaceNodeStatus({
      name,
      body: {
        ...current,
        status: {
          ...current.status,
          capacity,
          allocatable: capacity,
          conditions: [
            {
              type: 'Ready',
              status: 'True',
              reason: 'KubeletReady',
              message: 'registered by the kubevirt-ts test support',
              lastHeartbeatTime: now,
              lastTransitionTime: now,
            },
          ],
        },
      },
    });
  });
  await retryOnConflict(async () => {
    const node = await core.readNode({ name });
    node.spec = {
      ...node.spec,
      taints: (node.spec?.taints ?? []).filter((t) => t.key !== 'node.kubernetes.io/not-ready'),
    };
    await core.replaceNode({ name, body: node });
  });
}

async function retryOnConflict(write: () => Promise<void>): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if ((err as { code?: number }).code !== 409 || attempt >= 10) throw err;
      await new Promise((r) => setTimeout(r, 50 * attempt));
    }
  }
}
