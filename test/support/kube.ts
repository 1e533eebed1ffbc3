/**
 * A real Kubernetes control plane for integration tests and for the one-node cluster of
 * scripts/cluster (the one way the project starts one): etcd, kube-apiserver (RBAC on),
 * kube-controller-manager (garbage collector on) and kube-scheduler, built by
 * scripts/kube/build.sh and started on loopback with freshly generated certificates.
 *
 * Most tests use {@link sharedControlPlane}: one control plane per vitest run, started on
 * first use by the global setup (test/support/kube-global-setup.ts). A test that restarts
 * or breaks the API server starts its own with {@link startControlPlane}.
 *
 * The certificates are made in ./kube-pki, the component processes run by
 * ./kube-components, and stand-in Nodes registered by ./kube-node.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port';
import {
  available,
  type Component,
  controlPlaneComponents,
  logTail,
  startComponent,
  stopComponent,
  unavailableReason,
  waitUntil,
} from './kube-components';
import { CLIENT_EXT, issueCert, makePki, writeKubeconfig } from './kube-pki';

export {
  apiserverTestsEnabled,
  available,
  kubeBinDir,
  kubectlPath,
  stopDetachedControlPlane,
  unavailableReason,
} from './kube-components';
export { type ReadyNodeOptions, registerReadyNode } from './kube-node';
export { isOurProcess, terminate } from './processes';

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
  /**
   * The address the API server advertises as the `kubernetes` Service's endpoint (default
   * 127.0.0.1; it still listens on 127.0.0.1 only): with real nodes, an address of this
   * machine pods reach, where a relay forwards to the API server (scripts/cluster/up.ts).
   */
  advertiseAddress?: string;
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

  const kubeconfigPath = join(dir, 'admin.kubeconfig');
  const tls = { ca: join(pki, 'ca.crt'), cert: join(pki, 'admin.crt'), key: join(pki, 'admin.key') };

  // A port probed free may still be taken before the component binds it (by another test's
  // server): such a start is retried on fresh ports, with fresh etcd data.
  for (let attempt = 1; ; attempt++) {
    const ports = { etcdPort: await freePort(), etcdPeerPort: await freePort(), apiPort: await freePort() };
    try {
      return await launch(ports);
    } catch (err) {
      if (attempt >= 3 || !String(err).includes('address already in use')) {
        if (!opts.keepDir && !opts.dir) rmSync(dir, { recursive: true, force: true });
        throw err;
      }
      rmSync(join(dir, 'etcd'), { recursive: true, force: true });
    }
  }

  async function launch(ports: {
    etcdPort: number;
    etcdPeerPort: number;
    apiPort: number;
  }): Promise<ControlPlane> {
    const server = `https://127.0.0.1:${ports.apiPort}`;
    writeKubeconfig(kubeconfigPath, server, pki, 'admin');
    writeKubeconfig(join(dir, 'controller-manager.kubeconfig'), server, pki, 'controller-manager');
    writeKubeconfig(join(dir, 'scheduler.kubeconfig'), server, pki, 'scheduler');
    const { etcd, apiserver, controllerManager, scheduler } = controlPlaneComponents({
      dir,
      pki,
      ...ports,
      realNodes,
      advertiseAddress: opts.advertiseAddress,
    });
    const components = [etcd, apiserver];
    if (opts.controllerManager !== false) components.push(controllerManager);
    if (opts.scheduler !== false) components.push(scheduler);

    const get = (path: string) => httpsGet(server, tls, path);
    const deadWhy = (c: Component) => () =>
      c.proc && c.proc.exitCode !== null
        ? `${c.name} exited with ${c.proc.exitCode}:\n${logTail(dir, c.name)}`
        : undefined;
    // etcd dying (its port taken) shows as the API server never becoming ready: name both.
    const anyDead =
      (...cs: Component[]) =>
      () =>
        cs.map((c) => deadWhy(c)()).find((why) => why !== undefined);
    const waitApiReady = () =>
      waitUntil(
        `kube-apiserver at ${server}`,
        readyTimeoutMs,
        async () => (await get('/readyz')).status === 200,
        anyDead(apiserver, etcd),
      );

    const stopAll = async () => {
      for (const c of [...components].reverse()) await stopComponent(c);
    };
    const stop = async () => {
      await stopAll();
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
          anyDead(controllerManager),
        );
      }
    } catch (err) {
      // Only the processes: the caller may retry in the same directory.
      await stopAll();
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
