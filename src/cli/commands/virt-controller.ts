/**
 * `kubevirt-ts virt-controller --launcher-image IMAGE [--kubeconfig FILE]`: the cluster
 * controllers (VM, VMI, ReplicaSet, Pool, Migration) against an API server, as upstream's
 * virt-controller binary. Several replicas run; leader election on a
 * coordination.k8s.io Lease (`virt-controller` in the KubeVirt namespace) keeps one of
 * them reconciling (on by default, as upstream). A small HTTP server on `--port` answers
 * `/healthz` (the process serves) and `/leader` (upstream's readiness probe: 200 on every
 * replica, the body `{"apiserver":{"leader":"true"}}` only on the one holding the Lease,
 * so a standby is Ready too and a Deployment's rolling update can replace the leader). A
 * replica that loses the Lease exits, as upstream's does, and its pod restarts as a candidate.
 */

import { createServer, type Server } from 'node:http';
import { hostname } from 'node:os';
import type { Command } from 'commander';
import {
  CONTROLLER_THREADS,
  checkThreads,
  threadsFlag,
} from '../../controllers/virt-controller/controller-threads';
import { parseMetricsListen } from '../metrics-flags';
import { VERBOSITY_HELP } from '../verbosity-flag';
import { followKubeVirtConfig } from './follow-config';
import { restClientRateLimit } from './rest-client-limit';

interface ControllerFlags {
  kubeconfig?: string;
  launcherImage: string;
  hypervisor: string;
  podRuntime: string;
  kubevirtNamespace: string;
  leaderElect: boolean;
  leaderElectLeaseDuration: string;
  leaderElectRenewDeadline: string;
  leaderElectRetryPeriod: string;
  port: string;
  listenAddress: string;
  workers?: string;
  nodeHeartbeatTimeout: string;
  v: string;
  metricsListen?: string;
  metricsListenRetry?: string;
  tlsCertFile?: string;
  tlsKeyFile?: string;
}

/** An image reference a pod spec can carry: registry/path[:tag][@digest], no spaces or control characters. */
const IMAGE = /^[A-Za-z0-9][A-Za-z0-9._\-/:@]{0,254}$/;
const HYPERVISOR = /^[a-z0-9][a-z0-9-]{0,62}$/;
const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

/** A positive whole number of seconds from flag `name`, as milliseconds. */
function seconds(name: string, v: string): number {
  if (!/^\d+$/.test(v) || Number(v) < 1)
    throw new Error(`${name}: ${JSON.stringify(v)} is not a whole number of seconds >= 1`);
  return Number(v) * 1000;
}

/** The flags, checked; errors name the flag. */
export function checkControllerFlags(f: ControllerFlags) {
  if (!IMAGE.test(f.launcherImage))
    throw new Error(`--launcher-image: ${JSON.stringify(f.launcherImage)} is not an image reference`);
  if (f.podRuntime !== 'kubelet' && f.podRuntime !== 'local')
    throw new Error(`--pod-runtime: ${JSON.stringify(f.podRuntime)} is neither kubelet nor local`);
  if (!HYPERVISOR.test(f.hypervisor))
    throw new Error(`--hypervisor: ${JSON.stringify(f.hypervisor)} is not a driver name`);
  if (!NAMESPACE.test(f.kubevirtNamespace))
    throw new Error(`--kubevirt-namespace: ${JSON.stringify(f.kubevirtNamespace)} is not a DNS-1123 label`);
  if (!/^\d{1,5}$/.test(f.port) || Number(f.port) > 65535)
    throw new Error(`--port: ${JSON.stringify(f.port)} is not a port (0 turns the health server off)`);
  if (
    f.workers !== undefined &&
    (!/^\d+$/.test(f.workers) || Number(f.workers) < 1 || Number(f.workers) > 64)
  )
    throw new Error(`--workers: ${JSON.stringify(f.workers)} is not a number from 1 to 64`);
  const threads = checkThreads(
    Object.fromEntries(
      Object.keys(CONTROLLER_THREADS).map((g) => [
        g,
        (f as unknown as Record<string, string>)[`${g}ControllerThreads`],
      ]),
    ),
  );
  const lease = {
    leaseDurationMs: seconds('--leader-elect-lease-duration', f.leaderElectLeaseDuration),
    renewDeadlineMs: seconds('--leader-elect-renew-deadline', f.leaderElectRenewDeadline),
    retryPeriodMs: seconds('--leader-elect-retry-period', f.leaderElectRetryPeriod),
  };
  if (lease.renewDeadlineMs >= lease.leaseDurationMs)
    throw new Error('--leader-elect-renew-deadline must be shorter than --leader-elect-lease-duration');
  const nodeHeartbeatTimeoutMs = seconds('--node-heartbeat-timeout', f.nodeHeartbeatTimeout);
  const workers = f.workers === undefined ? undefined : Number(f.workers);
  return { lease, port: Number(f.port), workers, threads, nodeHeartbeatTimeoutMs };
}

/** Serves /healthz and /leader on `port`. */
function healthServer(port: number, address: string, isLeader: () => boolean): Promise<Server> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
    } else if (path === '/leader') {
      // upstream's leaderProbe: 200 either way; the body says which.
      const body = { apiserver: { leader: String(isLeader()) } };
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    } else {
      res.writeHead(404).end();
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, address, () => resolve(server));
  });
}

/** Registers `virt-controller` on the program. */
export function registerVirtControllerCommand(program: Command): void {
  const cmd = program
    .command('virt-controller')
    .description('run the cluster controllers (VM, VMI, ReplicaSet, Pool, Migration) against an API server')
    .requiredOption('--launcher-image <image>', 'image of the virt-launcher pods it creates')
    .option(
      '--kubeconfig <file>',
      'kubeconfig of the API server (default: $KUBECONFIG, ~/.kube/config, in-cluster)',
    )
    .option('--hypervisor <name>', "the launchers' hypervisor driver (libvirt, emulation)", 'libvirt')
    .option(
      '--pod-runtime <runtime>',
      "what runs launcher pods: kubelet (containerDisks from init containers) or local (kubevirt-ts's local pod runtime and image store)",
      'kubelet',
    )
    .option(
      '--kubevirt-namespace <ns>',
      'namespace of the KubeVirt install (Lease, KubeVirt resource)',
      'kubevirt',
    )
    .option('--no-leader-elect', 'reconcile without holding the Lease (one replica only)')
    .option('--leader-elect-lease-duration <s>', 'seconds a Lease holds without renewal', '15')
    .option(
      '--leader-elect-renew-deadline <s>',
      'seconds the leader may fail to renew before it steps down',
      '10',
    )
    .option('--leader-elect-retry-period <s>', 'seconds between Lease attempts', '2')
    .option('--port <port>', 'port of /healthz and /leader (0: none)', '8182')
    .option('--listen-address <addr>', 'address of the health server', '0.0.0.0')
    .option('--workers <n>', "every controller's workers, in place of the per-controller counts below");
  for (const [g, n] of Object.entries(CONTROLLER_THREADS))
    cmd.option(
      `${threadsFlag(g as keyof typeof CONTROLLER_THREADS)} <n>`,
      `workers of the ${g} controller (upstream's default ${n})`,
    );
  cmd
    .option(
      '--node-heartbeat-timeout <s>',
      "seconds without a virt-handler heartbeat after which a node's VMIs whose pods are gone fail (upstream: 300)",
      '300',
    )
    .option('--v <level>', VERBOSITY_HELP, '2')
    .option(
      '--metrics-listen <address:port>',
      'serve /metrics, /healthz and /readyz there (upstream serves them on 0.0.0.0:8443 over HTTPS)',
    )
    .option(
      '--metrics-listen-retry <seconds>',
      'when the metrics port is in use (replicas on one host network), retry binding it this often instead of failing',
    )
    .option('--tls-cert-file <file>', 'PEM certificate of the metrics server (HTTPS)')
    .option('--tls-key-file <file>', 'PEM key of --tls-cert-file')
    .action(async (f: ControllerFlags) => {
      const checked = checkControllerFlags(f);
      const listen = parseMetricsListen(f, 'virt-controller');
      const { ComponentLog, parseVerbosity } = await import('../../controllers/logging/component-log');
      const logs = new ComponentLog('virt-controller', parseVerbosity(f.v)).captureRuntime();
      // Loaded here so the other commands start without the Kubernetes client.
      const { KubeClient } = await import('../../controllers/runtime/kube/client');
      const { VirtController } = await import('../../controllers/virt-controller/virt-controller');
      const { apiFreezer } = await import('../../controllers/virt-controller/snapshot/api-freezer');
      const { unservedSnapshotKind } = await import('../../controllers/virt-controller/snapshot/wiring');
      const log = logs.line;
      const client = KubeClient.fromKubeconfig(f.kubeconfig, restClientRateLimit('virtController'));
      const config = await followKubeVirtConfig({
        client,
        namespace: f.kubevirtNamespace,
        logs,
        log,
        rateLimited: 'virtController',
      });
      let exitCode = 0;
      let done: () => void = () => {};
      const finished = new Promise<void>((r) => {
        done = r;
      });
      let reconcileError: (c: string, key: string, e: Error) => void = () => {};
      let snapshotsOff = await unservedSnapshotKind(client);
      // KubeVirt's own snapshot and clone CRDs are applied with this Deployment: give them a
      // moment to be established (the CSI snapshot kinds are not waited for).
      const ownKind = (off: string | undefined) =>
        off?.includes('.snapshot.kubevirt.io ') || off?.includes('.clone.kubevirt.io ');
      for (let i = 0; i < 20 && ownKind(snapshotsOff); i++) {
        await new Promise((r) => setTimeout(r, 1000));
        snapshotsOff = await unservedSnapshotKind(client);
      }
      if (snapshotsOff) log(`VM snapshot, restore and clone controllers off: ${snapshotsOff} is not served`);
      const controller = new VirtController({
        client,
        config: () => config.current(),
        launcher: {
          launcherImage: f.launcherImage,
          hypervisor: f.hypervisor,
          podRuntime: f.podRuntime as 'kubelet' | 'local',
        },
        workers: checked.workers,
        threads: checked.threads,
        nodeHeartbeatTimeoutMs: checked.nodeHeartbeatTimeoutMs,
        evacuation: true,
        // Its CRD comes with the install (manifests/01-crds.yaml).
        migrationPolicies: true,
        instancetypes: true,
        pools: true,
        volumes: true,
        dataVolumeTemplates: true,
        // Its CRD comes with the install (manifests/01-crds.yaml); without it VMIs naming
        // a definition get the missing-NAD condition and the kind is probed again.
        networkAttachments: true,
        // snapshot.kubevirt.io's CRDs come with the install, the CSI snapshot kinds with the
        // external-snapshotter's: without them the snapshot controllers stay off (logged).
        snapshots: snapshotsOff === undefined,
        freezer: apiFreezer((req) => client.request(req)),
        log,
        leaderElection: f.leaderElect
          ? {
              name: 'virt-controller',
              namespace: f.kubevirtNamespace,
              // The pod name (the Deployment's hostname), as upstream's identity.
              identity: `${process.env.POD_NAME || hostname()}_${process.pid}`,
              ...checked.lease,
            }
          : undefined,
        onLostLeadership: () => {
          log('lost the leader Lease: exiting so the pod restarts as a candidate');
          exitCode = 1;
          done();
        },
        onError: (c, key, e) => reconcileError(c, key, e),
      });
      // CDI's DataVolume and StorageProfile controllers run in this process, on its Manager
      // (CDI's own cdi-controller is not installed); importer pods run the launcher image,
      // which has qemu-img.
      // Upload pods' serving certificates come from the install's CA, as exporters' do.
      const { exportCertIssuer } = await import('./export-cert-issuer');
      const installCerts = await exportCertIssuer(client, f.kubevirtNamespace);
      const { registerCdiControllers } = await import('../../controllers/cdi-controller/cdi-controller');
      registerCdiControllers({
        manager: controller.manager,
        recorder: controller.recorder,
        importer: { image: f.launcherImage },
        snapshots: snapshotsOff === undefined,
        uploadCerts: installCerts,
        uploadProxyNamespace: f.kubevirtNamespace,
        workers: 2,
        onError: (c, key, e) => reconcileError(c, key, e),
      });
      // VirtualMachineExports: exporter pods run the launcher image (it has the server's
      // bundle); their certificates come from the install's CA.
      const { registerExportController } = await import('../../controllers/virt-controller/export/wiring');
      registerExportController({
        manager: controller.manager,
        recorder: controller.recorder,
        certs: installCerts,
        image: f.launcherImage,
        snapshots: snapshotsOff === undefined,
        // Its Ingresses to virt-exportproxy give the external links.
        installNamespace: f.kubevirtNamespace,
        workers: controller.workersFor('vmexport'),
        onError: (c, key, e) => reconcileError(c, key, e),
      });
      // A failed reconcile, with the object's kind, namespace, name and uid (from the cache).
      const { reconcileErrorLogger } = await import('../../controllers/logging/reconcile-log');
      const { cachedUid } = await import('../../controllers/virt-controller/cached-uid');
      reconcileError = reconcileErrorLogger(logs.logger, (c, key) => cachedUid(controller, c, key));
      const health =
        checked.port > 0
          ? await healthServer(checked.port, f.listenAddress, () => controller.manager.isLeader())
          : undefined;
      const metrics = listen
        ? await (await import('../../controllers/metrics/server')).serveMetrics({
            ...listen,
            sources: [controller.metrics],
            ready: () => controller.manager.isReady(),
            tlsConfiguration: () => config.current().configuration.tlsConfiguration,
            log,
          })
        : undefined;
      if (metrics) log(`metrics on ${metrics.url}/metrics`);
      process.once('SIGTERM', done);
      process.once('SIGINT', done);
      log(f.leaderElect ? 'waiting for the leader Lease' : 'starting (no leader election)');
      void controller.start().then(() => {
        if (controller.manager.isLeader()) log('leading: controllers running');
      });
      await finished;
      health?.close();
      await metrics?.close();
      await controller.stop();
      await config.stop();
      client.close();
      process.exit(exitCode);
    });
}
