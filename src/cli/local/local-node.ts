/**
 * Everything `kubevirt-ts up` runs in one process: the embedded store persisted in the
 * state directory and served on its socket, virt-controller, the local pod runtime
 * (launchers as child processes of this package's CLI, detached so they outlive us),
 * virt-handler with the libvirt driver in emulation mode when KVM is unusable, and the
 * local subresource API. Stopping it stops the control plane only: launchers and guests
 * keep running and the next start adopts them.
 */

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { KubeVirtConfiguration } from '../../api/generated/types';
import { registerCdiControllers } from '../../controllers/cdi-controller/cdi-controller';
import { MAX_UNFREEZE_TIMEOUT_SECONDS } from '../../controllers/common/unfreeze-timeout';
import { KubeVirtConfigWatcher } from '../../controllers/config/kubevirt-config';
import { DEFAULT_POD_NETWORK } from '../../controllers/local/pod-runtime/pod-network';
import { defaultCliEntry, PodRuntime } from '../../controllers/local/pod-runtime/pod-runtime';
import { PvBinder } from '../../controllers/local/pv-binder';
import { reconcileErrorLogger } from '../../controllers/logging/reconcile-log';
import { HandlerMetrics } from '../../controllers/metrics/handler-metrics';
import { type MetricsServer, serveMetrics } from '../../controllers/metrics/server';
import { type EmbeddedServer, serveEmbeddedStore } from '../../controllers/runtime/embedded/server';
import { EmbeddedStore } from '../../controllers/runtime/embedded/store';
import { cachedUid } from '../../controllers/virt-controller/cached-uid';
import type { LauncherPodOptions } from '../../controllers/virt-controller/services/pod-renderer';
import { VirtController } from '../../controllers/virt-controller/virt-controller';
import { VirtHandler } from '../../controllers/virt-handler/handler';
import { freezeGuest, thawGuest } from '../../controllers/virt-handler/vmi-operations';
import { IMAGE_ROOT_ENV } from '../../controllers/virt-launcher/image-dirs';
import { LibvirtDriver } from '../../drivers/libvirt-driver/libvirt-driver';
import { type LocalApiServer, serveLocalApi } from './local-api';
import { localConfigDefaults } from './local-config';
import { ensureLocalPki, type LocalPki } from './local-pki';
import { type LocalStorage, localStorageTypes, startLocalStorage } from './local-storage';
import { type LocalUpload, startLocalUpload } from './local-upload';
import { ensureStateDirs, type StatePaths } from './state-dir';

/** The CLI running now when it is a build of kubevirt-ts (launchers then match it), else the package's. */
function thisCliEntry(): string {
  const self = process.argv[1] ?? '';
  return /kubevirt-ts\.js$/.test(self) ? self : defaultCliEntry();
}

/** Options of {@link LocalNode}. */
export interface LocalNodeOptions {
  paths: StatePaths;
  /** Node name (default `local`): keep it stable, the next start adopts its pods. */
  nodeName?: string;
  /** A shared libvirt daemon for every launcher (default: each runs its own); the host probe uses it, else qemu:///system. */
  libvirtUri?: string;
  /**
   * Run guests with KVM (default false: software emulation). Turns useEmulation off, so a
   * host where /dev/kvm does not work refuses VMIs, saying so, instead of emulating.
   */
  allowKvm?: boolean;
  /**
   * The pod network (own namespace per launcher pod on bridge kvts0, see pod-network.ts):
   * its subnet, or false for none. Default: on, subnet 10.244.77.0/24.
   */
  podNetwork?: { subnet?: string; subnet6?: string; bridge?: string } | false;
  /** The CLI entry launchers run (default this package's dist/cli/kubevirt-ts.js). */
  cliEntry?: string;
  /**
   * Loopback port of virt-handler's /metrics, /healthz, /readyz; virt-controller's is the
   * next one. Default 0: any free ports (written to the state dir's metrics.json).
   */
  metricsPort?: number;
  log?: (component: string, message: string) => void;
  /**
   * Structured logs: each component's pino logger (see controllers/logging); when set, it
   * takes the place of `log`, VMI lines carry the VMI's kind, namespace, name and uid.
   */
  loggers?: (component: string) => Logger;
}

/** What local mode lays over the KubeVirt resource's configuration: emulation per the host. */
export function localConfigOverrides(allowKvm: boolean): KubeVirtConfiguration {
  return { developerConfiguration: { useEmulation: !allowKvm } };
}

/**
 * Launcher pods of local mode. No driver name: the pod renderer derives it from
 * useEmulation (the overrides above), `libvirt` (domain type kvm) with --kvm and
 * `emulation` (TCG only) without, so it is always one the launcher has.
 */
export const LOCAL_LAUNCHER: LauncherPodOptions = { launcherImage: 'kubevirt-ts/virt-launcher:local' };

/** The running local system. */
export class LocalNode {
  store!: EmbeddedStore;
  controller!: VirtController;
  runtime!: PodRuntime;
  handler!: VirtHandler;
  /** The cluster configuration, from the KubeVirt resource in the store. */
  config!: KubeVirtConfigWatcher;
  /** kube-controller-manager's static volume binding, so PVC disks can start here. */
  binder!: PvBinder;
  /** The CSI driver in-process and its provisioner, when the host allows them. */
  storage: LocalStorage | undefined;
  /** What `up` prints about storage: the pool and class, or why there is no dynamic provisioning. */
  storageStatus = 'not started';
  /** Local mode's CA and the upload proxy's pairs. */
  pki!: LocalPki;
  /** The upload proxy `virtctl image-upload` sends to; none without a pod network. */
  upload: LocalUpload | undefined;
  private storeServer: EmbeddedServer | undefined;
  private apiServer: LocalApiServer | undefined;
  private metricsServers: MetricsServer[] = [];
  private readonly componentLoggers = new Map<string, Logger>();
  /** Where each component's metrics are served, once started. */
  metricsUrls: { 'virt-handler'?: string; 'virt-controller'?: string } = {};
  readonly nodeName: string;

  constructor(readonly o: LocalNodeOptions) {
    this.nodeName = o.nodeName ?? 'local';
  }

  /** The network namespace path of a running pod, if it has one. */
  podNetns(podUid: string): string | undefined {
    return this.runtime?.networkOf(podUid)?.netns;
  }

  /** Opens the store and starts every component (resolves once all are started). */
  async start(): Promise<void> {
    const { paths } = this.o;
    const uri = this.o.libvirtUri ?? 'qemu:///system';
    const log = (c: string, m: string) => this.logLine(c, m);
    const loggerOf = (c: string) => this.loggerOf(c);
    ensureStateDirs(paths);
    this.store = await EmbeddedStore.open({
      dir: paths.store,
      // `kubevirt` too, as KubeVirt's install creates it: the KubeVirt resource lives there.
      namespaces: ['default', 'kube-system', 'kube-public', 'kube-node-lease', 'kubevirt'],
      types: [...localStorageTypes],
    });
    this.storeServer = await serveEmbeddedStore(this.store, paths.storeSocket);
    // Before the pod runtime: adopted pods' CSI volumes need the driver.
    const storage = await startLocalStorage({
      client: this.store,
      dir: paths.csi,
      nodeName: this.nodeName,
      log: (m) => log('csi', m),
    });
    this.storage = storage.running;
    this.storageStatus = storage.status;
    this.pki = await ensureLocalPki(paths.pki);
    // Upload pods need a network namespace of their own (local-upload.ts says why).
    const uploads = this.o.podNetwork !== false;
    // The KubeVirt resource configures local mode as it does a cluster (feature gates,
    // migrations, ...); only emulation follows the host and --kvm.
    this.config = new KubeVirtConfigWatcher({
      client: this.store,
      overrides: localConfigOverrides(this.o.allowKvm ?? false),
      defaults: localConfigDefaults(),
      log: (m) => log('config', m),
    });
    this.controller = new VirtController({
      client: this.store,
      config: () => this.config.current(),
      launcher: LOCAL_LAUNCHER,
      // Claims are served and bound here (the binder below): VMIs wait for theirs.
      volumes: true,
      // The embedded store serves NetworkAttachmentDefinitions; the pod runtime attaches them.
      networkAttachments: true,
      // The embedded store serves the instancetype.kubevirt.io kinds and VirtualMachinePools.
      instancetypes: true,
      // ... and CDI's kinds: dataVolumeTemplates become DataVolumes (CDI's controller below).
      dataVolumeTemplates: true,
      // ... and the snapshot kinds: VirtualMachineSnapshots, Restores and Clones on the
      // local snapshotter.
      snapshots: true,
      // An online snapshot freezes the guest through its agent, as virt-api's freeze
      // subresource does on a cluster: here straight to this node's launcher (the timeout
      // in whole seconds, rounded up as the cluster's freezer sends it).
      freezer: {
        freeze: (ns, name, ms) =>
          freezeGuest(
            this.handler,
            ns,
            name,
            Math.min(Math.max(0, Math.ceil(ms / 1000)), MAX_UNFREEZE_TIMEOUT_SECONDS),
          ),
        unfreeze: (ns, name) => thawGuest(this.handler, ns, name),
      },
      pools: true,
      onError: (c, key, e) => reconcileError(c, key, e),
    });
    const controllerLogger = loggerOf('virt-controller');
    const reconcileError = controllerLogger
      ? reconcileErrorLogger(controllerLogger, (c, key) => cachedUid(this.controller, c, key))
      : (c: string, key: string, e: Error) => log('virt-controller', `${c} ${key}: ${e.message}`);
    // CDI's DataVolume and StorageProfile controllers on virt-controller's manager, as the
    // cluster's virt-controller hosts them; importer pods run in the pod runtime below.
    registerCdiControllers({
      manager: this.controller.manager,
      recorder: this.controller.recorder,
      importer: { image: LOCAL_LAUNCHER.launcherImage },
      // Clones are CSI clones (a claim's dataSource), which only local mode's provisioner on
      // the CSI pool makes; hand-made PVs bound by the static binder would come up empty.
      clones: this.storage !== undefined,
      // The upload controller, its pods' certificates from local mode's CA.
      uploadCerts: uploads ? this.pki.uploadCerts : undefined,
      uploadsRefused: uploads
        ? undefined
        : 'upload sources need an upload pod with its own network namespace, which local mode without a pod network (--no-pod-network) does not give: use an http or registry source',
      workers: 2,
      onError: (c, key, e) => reconcileError(c, key, e),
    });
    this.binder = new PvBinder({ client: this.store, log: (m) => log('pv-binder', m) });
    const cli = this.o.cliEntry ?? thisCliEntry();
    this.runtime = new PodRuntime({
      client: this.store,
      nodeName: this.nodeName,
      root: paths.pods,
      bindPending: true,
      manageNode: true,
      commands: {
        'kubevirt-ts': [process.execPath, cli],
        // The project image's entrypoint is kubevirt-ts: a container giving only args (the
        // importer pod: `args: [cdi-importer]`) runs that subcommand.
        'cdi-importer': [process.execPath, cli, 'cdi-importer'],
        'cdi-uploadserver': [process.execPath, cli, 'cdi-uploadserver'],
        // A hotplug attachment pod (`/bin/busybox sleep ...`) only holds its claim published
        // in its pod directory: an idle process, whatever the arguments, runs nothing else.
        '/bin/busybox': [process.execPath, '-e', 'setInterval(() => {}, 1 << 30)'],
      },
      csi: this.storage?.podVolumes,
      // Each launcher runs its own libvirt daemons unless a shared one was asked for.
      env: { [IMAGE_ROOT_ENV]: paths.images, ...(this.o.libvirtUri ? { KUBEVIRT_TS_LIBVIRT_URI: uri } : {}) },
      network:
        this.o.podNetwork === false
          ? undefined
          : {
              ...DEFAULT_POD_NETWORK,
              ...this.o.podNetwork,
              dataDir: join(paths.root, 'cni'),
            },
      log: (m) => log('pod runtime', m),
    });
    this.handler = this.makeHandler();
    await this.config.start();
    await this.binder.start();
    await this.storage?.provisioner.start();
    await this.storage?.snapshotter.start();
    await this.controller.start();
    await this.runtime.start();
    await this.handler.start();
    if (uploads)
      this.upload = await startLocalUpload({
        client: this.store,
        pki: this.pki.files,
        networkOf: (uid) => this.runtime.networkOf(uid),
        log: (m) => log('cdi-uploadproxy', m),
      });
    this.apiServer = await serveLocalApi(this, paths.apiSocket);
    await this.serveMetrics();
  }

  /** A component's structured logger, one per component, when `loggers` is set. */
  private loggerOf(component: string): Logger | undefined {
    let l = this.componentLoggers.get(component);
    if (!l && this.o.loggers) {
      l = this.o.loggers(component);
      this.componentLoggers.set(component, l);
    }
    return l;
  }

  /** A plain progress line of `component`: to its logger when there are loggers, else to `log`. */
  private logLine(component: string, message: string): void {
    if (this.o.loggers) this.loggerOf(component)?.info(message);
    else this.o.log?.(component, message);
  }

  private makeHandler(): VirtHandler {
    const { paths } = this.o;
    const uri = this.o.libvirtUri ?? 'qemu:///system';
    const log = (c: string, m: string) => this.logLine(c, m);
    const loggerOf = (c: string) => this.loggerOf(c);
    const allowKvm = this.o.allowKvm ?? false;
    return new VirtHandler({
      client: this.store,
      nodeName: this.nodeName,
      podsRoot: paths.pods,
      notifySocket: join(paths.handler, 'domain-notify.sock'),
      capabilities: async () => {
        const d = await LibvirtDriver.connect({ name: allowKvm ? 'libvirt' : 'emulation', allowKvm, uri });
        try {
          return await d.probe();
        } finally {
          await d.close();
        }
      },
      migrationConfig: () => this.config.current().migrations,
      podNetns: (uid) => this.runtime.networkOf(uid)?.netns,
      log: (m) => log('virt-handler', m),
      logger: loggerOf('virt-handler'),
    });
  }

  /**
   * Stops virt-handler and starts a new one, as a node agent's restart does; launchers,
   * guests and their pod networks keep running (the new handler takes them over).
   */
  async restartHandler(): Promise<void> {
    await this.handler.stop();
    this.handler = this.makeHandler();
    await this.handler.start();
  }

  /** virt-handler's and virt-controller's metrics and health servers, plain HTTP on loopback. */
  private async serveMetrics(): Promise<void> {
    const port = this.o.metricsPort ?? 0;
    // Through `this`: restartHandler() replaces the handler.
    const handler = {
      statsTargets: () => this.handler.statsTargets(),
      isReady: () => this.handler.isReady(),
    };
    const controller = this.controller;
    const h = await serveMetrics({
      sources: [
        new HandlerMetrics({ targets: () => handler.statsTargets(), ready: () => handler.isReady() }),
      ],
      ready: () => handler.isReady(),
      port,
    });
    this.metricsServers.push(h);
    const c = await serveMetrics({
      sources: [controller.metrics],
      ready: () => controller.manager.isReady(),
      port: port ? port + 1 : 0,
    });
    this.metricsServers.push(c);
    this.metricsUrls = { 'virt-handler': h.url, 'virt-controller': c.url };
    writeFileSync(this.o.paths.metricsFile, `${JSON.stringify(this.metricsUrls, null, 2)}\n`);
  }

  /** Stops the control plane; launchers and guests keep running. */
  async stop(): Promise<void> {
    await this.apiServer?.close().catch(() => undefined);
    await this.upload?.close().catch(() => undefined);
    for (const m of this.metricsServers) await m.close().catch(() => undefined);
    await this.handler?.stop().catch(() => undefined);
    await this.runtime?.stop().catch(() => undefined);
    await this.controller?.stop().catch(() => undefined);
    await this.binder?.stop().catch(() => undefined);
    await this.storage?.provisioner.stop().catch(() => undefined);
    await this.storage?.snapshotter.stop().catch(() => undefined);
    await this.storage?.csi.close();
    await this.config?.stop().catch(() => undefined);
    await this.storeServer?.close().catch(() => undefined);
    await this.store?.close?.();
  }
}
