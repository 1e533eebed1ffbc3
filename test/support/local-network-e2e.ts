/**
 * Test support: the set-up local-mode networking e2e tests share. A `LocalNode` (what
 * `kubevirt-ts up` runs) with its pod network on a test bridge and subnet, the tiny guest
 * imported into its image store, another pod's namespace on the same bridge and IPAM with
 * an echo server, examples/vm-tiny-net.yaml applied (the guest sends 64 KiB to that pod),
 * and the tear-down that checks the host is left as it was.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import { parse, stringify } from 'yaml';
import type { VirtualMachineInstanceSpec } from '../../src/api/generated/types';
import { applyObjects, loadAndAdmit } from '../../src/cli/local/apply';
import { ImageStore } from '../../src/cli/local/images';
import { LocalNode } from '../../src/cli/local/local-node';
import { statePaths } from '../../src/cli/local/state-dir';
import type { Pod } from '../../src/controllers/common/pod';
import { podEmptyDirPath } from '../../src/controllers/launcher-protocol/paths';
import { netnsName, PodNetwork } from '../../src/controllers/local/pod-runtime/pod-network';
import { PodType, VirtualMachineType } from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { scopedSnapshot } from './net-snapshot';
import { ECHO_SERVER, type NsProcess, repoRoot, startInNs } from './netns-process';
import { waitFor as pollUntil } from './wait';

const waitFor = <T>(
  what: string,
  fn: () => Promise<T | undefined | false> | T | undefined | false,
  ms: number,
) => pollUntil(what, fn, ms, 50);

/** One local-mode networking run: a node, a peer pod and one VM named `name`. */
export class LocalNetworkRun {
  readonly bridge: string;
  readonly peerUid: string;
  state = '';
  node!: LocalNode;
  nodeOptions!: ConstructorParameters<typeof LocalNode>[0];
  peerNet!: PodNetwork;
  peerServer: NsProcess | undefined;
  /** The launcher pod's namespace once known (checked gone at the end). */
  launcherNs = '';
  private before!: ReturnType<typeof scopedSnapshot>;

  /** `prefix` names the bridge (`<prefix><pid % 10000>`, at most 10 characters) and the state dir. */
  constructor(
    prefix: string,
    readonly subnet: string,
    readonly name: string,
  ) {
    const tag = process.pid % 10000;
    this.bridge = `${prefix}${tag}`;
    this.peerUid = `eeee${tag.toString(16).padStart(4, '0')}-0000-4000-8000-000000000002`;
  }

  /** The peer pod's namespace. */
  get peerNs(): string {
    return netnsName(this.peerUid);
  }

  /** Starts the node on the test bridge and imports the tiny guest `guest`. */
  async start(guest: string): Promise<void> {
    this.before = scopedSnapshot([], this.bridge);
    this.state = mkdtempSync(join(tmpdir(), `kvts-${this.bridge}-`));
    chmodSync(this.state, 0o755);
    const paths = statePaths(this.state);
    this.nodeOptions = {
      paths,
      podNetwork: { subnet: this.subnet, bridge: this.bridge },
      log: process.env.KUBEVIRT_TS_NODE_LOG ? (c, m) => console.log(`${c}: ${m}`) : undefined,
    };
    this.node = new LocalNode(this.nodeOptions);
    await this.node.start();
    new ImageStore(paths.images).import('kubevirt-ts/tiny-guest', guest);
    // The other pod: a namespace on the same bridge and IPAM as local mode's pods.
    this.peerNet = new PodNetwork({
      bridge: this.bridge,
      subnet: this.subnet,
      pluginDir: '/usr/lib/cni',
      dataDir: join(this.state, 'cni'),
    });
    mkdirSync(join(this.state, 'peer'));
  }

  /** Sets the peer pod up with an echo server on `port`; returns its IP. */
  async startPeer(port = 7070): Promise<string> {
    const peer = await this.peerNet.setUp(this.peerUid, join(this.state, 'peer'));
    this.peerServer = await startInNs(
      this.peerNs,
      process.execPath,
      ['-e', ECHO_SERVER, String(port)],
      'ready',
    );
    return peer.ip;
  }

  /**
   * Applies examples/vm-tiny-net.yaml as `name`, its guest sending 64 KiB to `connect`
   * (`ip:port`), after `edit` changed the VM's template spec.
   */
  async applyTinyNetVm(
    connect: string,
    edit: (spec: VirtualMachineInstanceSpec) => void = () => {},
  ): Promise<void> {
    const vm = parse(readFileSync(join(repoRoot, 'examples', 'vm-tiny-net.yaml'), 'utf8'));
    vm.metadata.name = this.name;
    vm.spec.template.metadata.labels['kubevirt.io/vm'] = this.name;
    vm.spec.template.spec.terminationGracePeriodSeconds = 5;
    vm.spec.template.spec.domain.firmware.kernelBoot.kernelArgs += ` kvts.connect=${connect}`;
    edit(vm.spec.template.spec);
    const file = join(this.state, 'vm.yaml');
    writeFileSync(file, stringify(vm));
    const objects = await loadAndAdmit([file], new ImageStore(statePaths(this.state).images), true);
    await applyObjects(this.node.store, objects);
  }

  /** Waits for the VM's launcher pod to have its pod IP. */
  launcherPod(): Promise<Pod & KubeObject> {
    return waitFor(
      'the launcher pod with its pod IP',
      async () => {
        const pods = await this.node.store.list<Pod & KubeObject>(PodType, { namespace: 'default' });
        return pods.items.find((p) => p.metadata?.name?.includes(this.name) && p.status?.podIP);
      },
      120_000,
    );
  }

  /** The host directory of `pod`'s `sockets` volume. */
  socketsOf(pod: Pod & KubeObject): string {
    return podEmptyDirPath(statePaths(this.state).pods, pod.metadata?.uid ?? '', 'sockets');
  }

  /** Deletes what is left, stops the node, and checks the host's namespaces, bridge ports and nftables. */
  async tearDown(): Promise<void> {
    this.peerServer?.child.kill('SIGKILL');
    // A VM the test did not get to delete: delete it and let its pod go (guests outlive `up`).
    await this.node?.store
      .delete(VirtualMachineType, this.name, { namespace: 'default' })
      .catch(() => undefined);
    await waitFor(
      'launcher pods to go',
      async () => (await this.node.store.list(PodType, { namespace: 'default' })).items.length === 0,
      90_000,
    ).catch(() => undefined);
    await this.peerNet?.tearDown(this.peerUid, join(this.state, 'peer')).catch(() => undefined);
    await this.node?.stop();
    await new Promise((r) => setTimeout(r, 500));
    try {
      execFileSync('ip', ['link', 'del', this.bridge], { stdio: 'ignore' });
    } catch {
      // never made
    }
    if (this.state) rmSync(this.state, { recursive: true, force: true });
    expect(scopedSnapshot([this.launcherNs, this.peerNs], this.bridge)).toEqual(this.before);
  }
}
