/**
 * One node end to end, for e2e tests and the node benchmark: the embedded store (or any
 * ObjectClient), virt-controller, the local pod runtime (launchers as real processes of
 * this package's CLI), virt-handler, the emulation driver on qemu:///system, and the tiny
 * guest in a local image store. Each harness has its own node name, pod root and domain
 * names, and cleans up every process and domain it made.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClusterConfig } from '../../src/api/config/cluster-config';
import type { VirtualMachine, VirtualMachineInstance } from '../../src/api/generated/types';
import type { Pod } from '../../src/controllers/common/pod';
import { VmiResource } from '../../src/controllers/common/vmi-resource';
import { CONSOLE_SOCKET, podEmptyDirPath } from '../../src/controllers/launcher-protocol/paths';
import { shortDir } from '../../src/controllers/launcher-protocol/short-dir';
import { defaultCliEntry, PodRuntime } from '../../src/controllers/local/pod-runtime/pod-runtime';
import { EmbeddedStore } from '../../src/controllers/runtime/embedded/store';
import { PodType, VirtualMachineType } from '../../src/controllers/runtime/resources';
import type { KubeObject, ObjectClient } from '../../src/controllers/runtime/types';
import { VirtController, type WriteRecord } from '../../src/controllers/virt-controller/virt-controller';
import { VirtHandler } from '../../src/controllers/virt-handler/handler';
import { imageDir } from '../../src/controllers/virt-launcher/image-dirs';
import { LibvirtDriver } from '../../src/drivers/libvirt-driver/libvirt-driver';
import { available, guestDir, KERNEL_CMDLINE, SerialConsole, unavailableReason } from '../support/guest';
import { integration } from '../support/integration';
import { waitFor as pollUntil } from '../support/wait';

export const LIBVIRT_URI = 'qemu:///system';

/** The launcher CLI the pod runtime runs: KUBEVIRT_TS_CLI_ENTRY, else this package's dist build. */
export function cliEntry(): string {
  return process.env.KUBEVIRT_TS_CLI_ENTRY || defaultCliEntry();
}

/** Whether the pieces an end-to-end run needs exist (the CLI build; the guest and libvirt are checked by callers). */
export function cliBuilt(): boolean {
  return existsSync(cliEntry());
}

/** A VirtualMachine that boots the tiny guest by kernel boot from the image store, no disks, no network. */
export function tinyGuestVm(name: string, namespace: string, runStrategy = 'Always'): VirtualMachine {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name, namespace },
    spec: {
      runStrategy,
      template: {
        metadata: { labels: { 'kubevirt.io/vm': name } },
        spec: {
          domain: {
            devices: { autoattachPodInterface: false, autoattachGraphicsDevice: false },
            firmware: {
              kernelBoot: {
                kernelArgs: KERNEL_CMDLINE,
                container: {
                  image: 'kubevirt-ts/tiny-guest',
                  kernelPath: '/vmlinuz',
                  initrdPath: '/initrd.img',
                },
              },
            },
            resources: { requests: { memory: '128Mi' } },
          },
          terminationGracePeriodSeconds: 30,
        },
      },
    },
  };
}

/** Options of {@link NodeHarness}. */
export interface NodeHarnessOptions {
  client: ObjectClient;
  /** Unique per harness: it names the node and prefixes nothing else. */
  nodeName: string;
  /** Bind pods ourselves (no scheduler). Default true. */
  bindPending?: boolean;
  /** Run virt-controller here (default true). */
  controller?: boolean;
  /** The Node is registered by someone else (e.g. a test's real kubelet stand-in). Default true: the runtime does it. */
  manageNode?: boolean;
  /** Feature gates of the cluster config virt-controller runs with (e.g. HostDisk). */
  featureGates?: string[];
  /** virt-controller handles volumes (PVC claims). Default false. */
  volumes?: boolean;
  /** virt-controller expands instance types and preferences (and stores their revisions). Default false. */
  instancetypes?: boolean;
  /** A libvirtd socket to use instead of the system daemon's, for launchers and the handler (a second "host"). */
  libvirtSocket?: string;
  /** Launchers run their own libvirt daemons (the default outside tests) instead of the system daemon. */
  ownLibvirt?: boolean;
  /** The handler's migration address (the libvirt URI migration targets on this node are reached at). */
  migrationAddress?: string;
}

/** A component's log: printed with `prefix` under KUBEVIRT_TS_NODE_LOG, else dropped. */
function nodeLog(prefix: string): (message: string) => void {
  return process.env.KUBEVIRT_TS_NODE_LOG ? (m) => console.log(`${prefix}: ${m}`) : () => {};
}

/** Polls `fn` until it returns a truthy value (node flows are slow: 120 s by default). */
export function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 120_000,
): Promise<T> {
  return pollUntil(what, fn, timeoutMs, 50);
}

/** One node with controller, pod runtime and handler. */
export class NodeHarness {
  readonly root: string;
  readonly images: string;
  readonly controllerWrites: WriteRecord[] = [];
  readonly handlerWrites: string[] = [];
  controller: VirtController | undefined;
  runtime: PodRuntime | undefined;
  handler: VirtHandler | undefined;

  constructor(readonly o: NodeHarnessOptions) {
    this.root = mkdtempSync(join(tmpdir(), `kvts-node-${o.nodeName}-`));
    chmodSync(this.root, 0o755);
    this.images = join(this.root, 'images');
    mkdirSync(this.images, { mode: 0o755 });
    symlinkSync(guestDir, imageDir(this.images, 'kubevirt-ts/tiny-guest'));
    mkdirSync(this.podsRoot, { mode: 0o755 });
  }

  get podsRoot(): string {
    return join(this.root, 'pods');
  }

  newController(): VirtController {
    return new VirtController({
      client: this.o.client,
      config: createClusterConfig(
        {
          developerConfiguration: {
            useEmulation: true,
            ...(this.o.featureGates ? { featureGates: this.o.featureGates } : {}),
          },
        },
        { hostArchitecture: 'amd64' },
      ),
      launcher: { launcherImage: 'kubevirt-ts/virt-launcher:dev', hypervisor: 'emulation' },
      onWrite: (w) => this.controllerWrites.push(w),
      onError: process.env.KUBEVIRT_TS_NODE_LOG
        ? (c, k, e) => console.log(`controller ${c} ${k}: ${e.message}`)
        : () => {},
      ...(this.o.volumes ? { volumes: true } : {}),
      ...(this.o.instancetypes ? { instancetypes: true } : {}),
    });
  }

  newRuntime(): PodRuntime {
    return new PodRuntime({
      client: this.o.client,
      nodeName: this.o.nodeName,
      root: this.podsRoot,
      bindPending: this.o.bindPending ?? true,
      manageNode: this.o.manageNode ?? true,
      commands: { 'kubevirt-ts': [process.execPath, cliEntry()] },
      env: {
        KUBEVIRT_TS_IMAGE_ROOT: this.images,
        ...(this.o.ownLibvirt ? {} : { KUBEVIRT_TS_LIBVIRT_URI: LIBVIRT_URI }),
        ...(this.o.libvirtSocket ? { KUBEVIRT_TS_LIBVIRT_SOCKET: this.o.libvirtSocket } : {}),
      },
      log: nodeLog(`pod runtime ${this.o.nodeName}`),
    });
  }

  newHandler(): VirtHandler {
    return new VirtHandler({
      client: this.o.client,
      nodeName: this.o.nodeName,
      podsRoot: this.podsRoot,
      notifySocket: join(this.root, 'handler', 'domain-notify.sock'),
      capabilities: async () => {
        const d = await this.connectLibvirt();
        try {
          return await d.probe();
        } finally {
          await d.close();
        }
      },
      orphanDriver: () => this.connectLibvirt(),
      resyncMs: 1_000,
      ...(this.o.migrationAddress ? { migrationAddress: this.o.migrationAddress } : {}),
      onWrite: (kind, name) => {
        if (kind === 'VirtualMachineInstance') this.handlerWrites.push(name);
      },
      log: nodeLog(`handler ${this.o.nodeName}`),
    });
  }

  /** The emulation driver on this node's libvirtd. */
  private connectLibvirt(): Promise<LibvirtDriver> {
    return LibvirtDriver.connect({
      name: 'emulation',
      allowKvm: false,
      uri: LIBVIRT_URI,
      ...(this.o.libvirtSocket ? { socketPath: this.o.libvirtSocket } : {}),
    });
  }

  async start(): Promise<void> {
    if (this.o.controller !== false) {
      this.controller = this.newController();
      await this.controller.start();
    }
    this.runtime = this.newRuntime();
    await this.runtime.start();
    this.handler = this.newHandler();
    await this.handler.start();
  }

  /** The VMI's launcher pod on this node. */
  async podOf(vmi: VirtualMachineInstance): Promise<Pod | undefined> {
    const pods = await this.o.client.list<Pod & KubeObject>(PodType, {
      namespace: vmi.metadata?.namespace,
      labelSelector: `kubevirt.io/created-by=${vmi.metadata?.uid}`,
    });
    return pods.items.find((p) => p.spec?.nodeName === this.o.nodeName && !p.metadata?.deletionTimestamp);
  }

  /** Connects to the console relay in a pod's sockets dir. */
  async console(pod: Pod): Promise<SerialConsole> {
    const dir = podEmptyDirPath(this.podsRoot, pod.metadata?.uid ?? '', 'sockets');
    return SerialConsole.connect(join(shortDir(dir), CONSOLE_SOCKET), 60_000);
  }

  getVm(namespace: string, name: string) {
    return this.o.client.get<VirtualMachine & KubeObject>(VirtualMachineType, name, namespace);
  }

  getVmi(namespace: string, name: string) {
    return this.o.client.get<VirtualMachineInstance & KubeObject>(VmiResource, name, namespace);
  }

  /** Stops the components (launchers and guests keep running), then kills launchers and destroys domains with `domainPrefix`. */
  async close(domainPrefix?: string): Promise<void> {
    await this.handler?.stop().catch(() => undefined);
    await this.runtime?.stop().catch(() => undefined);
    await this.controller?.stop().catch(() => undefined);
    this.runtime?.killAll();
    if (domainPrefix) destroyDomains(domainPrefix);
    if (!process.env.KUBEVIRT_TS_KEEP_NODE_DIRS) rmSync(this.root, { recursive: true, force: true });
  }
}

/** Destroys and undefines every libvirt domain whose name starts with `prefix`. */
export function destroyDomains(prefix: string): void {
  const list =
    spawnSync('virsh', ['-c', LIBVIRT_URI, 'list', '--all', '--name'], { encoding: 'utf8' }).stdout ?? '';
  for (const name of list.split('\n').map((s) => s.trim())) {
    if (!name?.startsWith(prefix)) continue;
    spawnSync('virsh', ['-c', LIBVIRT_URI, 'destroy', name], { stdio: 'ignore' });
    spawnSync('virsh', ['-c', LIBVIRT_URI, 'undefine', '--nvram', name], { stdio: 'ignore' });
  }
}

/** Whether libvirt on {@link LIBVIRT_URI} answers. */
export function libvirtAnswers(): boolean {
  return spawnSync('virsh', ['-c', LIBVIRT_URI, 'version'], { stdio: 'ignore' }).status === 0;
}

/** Whether libvirt has a domain by that name. */
export function domainExists(name: string): boolean {
  return spawnSync('virsh', ['-c', LIBVIRT_URI, 'domstate', name], { stdio: 'ignore' }).status === 0;
}

/**
 * Why a node end-to-end test cannot run here, or undefined: the test guest, the CLI build
 * and the system libvirtd are checked in that order, then `extra` (a further requirement).
 */
export function e2eBlocker(extra?: () => string | undefined): string | undefined {
  if (!available()) return unavailableReason;
  if (!cliBuilt()) return `the CLI is not built (${cliEntry()}): npm run build`;
  if (!libvirtAnswers()) return `libvirtd does not answer on ${LIBVIRT_URI}`;
  return extra?.();
}

/** The integration gating of an end-to-end test `name`: true to run; see {@link e2eBlocker}. */
export function e2eRun(name: string, extra?: () => string | undefined): boolean {
  const blocker = e2eBlocker(extra);
  return integration(name, !blocker, blocker ?? '');
}

/** Whether a process with that pid exists. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A started {@link NodeHarness} on a fresh embedded store; see {@link startEmbeddedNode}. */
export interface EmbeddedNode {
  store: EmbeddedStore;
  node: NodeHarness;
  /** Closes the node (destroying domains named with `domainPrefix`), then the store. */
  close(domainPrefix?: string): Promise<void>;
}

/** Opens an embedded store and starts a node on it named `nodeName` (further harness options in `options`). */
export async function startEmbeddedNode(
  nodeName: string,
  options: Omit<NodeHarnessOptions, 'client' | 'nodeName'> = {},
): Promise<EmbeddedNode> {
  const store = await EmbeddedStore.open();
  const node = new NodeHarness({ ...options, client: store, nodeName });
  try {
    await node.start();
  } catch (e) {
    await node.close();
    await store.close?.();
    throw e;
  }
  return {
    store,
    node,
    async close(domainPrefix?: string) {
      await node.close(domainPrefix);
      await store.close?.();
    },
  };
}
