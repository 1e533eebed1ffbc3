/**
 * The stand-in kubelet of the scale benchmark (the role KWOK plays upstream, plus the
 * launcher process a real pod would run): for each launcher pod bound to one of its
 * nodes it starts an in-process virt-launcher on that node's fake driver, serving on the
 * pod's sockets emptyDir where virt-handler looks, and reports the pod Running with an IP;
 * a launcher that exits makes its pod Succeeded; a deleted pod's launcher is stopped and
 * the pod object removed (grace 0, as the kubelet does). With `bind` it also plays
 * kube-scheduler (the embedded store has none), round-robin over the given nodes.
 */
import { mkdirSync } from 'node:fs';
import type { Pod } from '../../src/controllers/common/pod';
import { podEmptyDirPath } from '../../src/controllers/launcher-protocol/paths';
import { shortDir } from '../../src/controllers/launcher-protocol/short-dir';
import { ConflictError, NotFoundError } from '../../src/controllers/runtime/errors';
import { SharedInformerFactory } from '../../src/controllers/runtime/informer';
import { objectKey, PodType } from '../../src/controllers/runtime/resources';
import type { KubeObject, ObjectClient } from '../../src/controllers/runtime/types';
import { LAUNCHER_POD_SELECTOR } from '../../src/controllers/virt-controller/virt-controller';
import { VirtLauncher } from '../../src/controllers/virt-launcher/launcher';
import type { HypervisorDriver } from '../../src/drivers';

/** One simulated node as the kubelet needs it. */
export interface KubeletNode {
  name: string;
  podsRoot: string;
  /** A fake driver on this node's fake host (one per launcher, as each pod dials its own). */
  driver: () => HypervisorDriver;
}

const stamp = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

export class StandInKubelet {
  private readonly factory: SharedInformerFactory;
  private readonly nodes: Map<string, KubeletNode>;
  private readonly launchers = new Map<string, VirtLauncher>();
  private readonly busy = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();
  private next = 0;
  private ip = 0;
  /** Writes by role, for the report (not counted as VMI writes). */
  readonly writes = { bind: 0, status: 0, delete: 0 };

  constructor(
    private readonly client: ObjectClient,
    nodes: KubeletNode[],
    /** Bind unbound launcher pods to these nodes, round-robin (none: leave binding to kube-scheduler). */
    private readonly bindTo: string[],
  ) {
    this.nodes = new Map(nodes.map((n) => [n.name, n]));
    this.factory = new SharedInformerFactory(client);
    // As a kubelet watches: its node's pods only (spec.nodeName), and for binding the unbound.
    const selectors = nodes.map((n) => `spec.nodeName=${n.name}`);
    if (bindTo.length) selectors.push('spec.nodeName=');
    const informers = selectors.map((fieldSelector) =>
      this.factory.informerFor(PodType, { labelSelector: LAUNCHER_POD_SELECTOR, fieldSelector }),
    );
    // A pod moves from the unbound informer to its node's: look it up in all.
    const current = (key: string) => {
      for (const i of informers) {
        const p = i.indexer.get(key);
        if (p) return p as Pod;
      }
      return undefined;
    };
    const on = (o: KubeObject) => {
      const key = objectKey(o);
      this.kick(key, () => current(key));
    };
    for (const i of informers) i.addEventHandler({ onAdd: on, onUpdate: (_a, b) => on(b), onDelete: on });
  }

  async start(): Promise<void> {
    this.factory.start();
    await this.factory.waitForCacheSync();
  }

  async stop(): Promise<void> {
    await this.factory.shutdown();
    await Promise.all([...this.busy.values()]);
    await Promise.all([...this.launchers.values()].map((l) => l.exit(0).catch(() => undefined)));
  }

  /** One run per pod at a time; an event meanwhile reruns it on the then-cached pod. */
  private kick(key: string, current: () => Pod | undefined): void {
    if (this.busy.has(key)) {
      this.again.add(key);
      return;
    }
    const run = Promise.resolve()
      .then(() => {
        const pod = current();
        return pod ? this.sync(pod) : undefined;
      })
      .catch((err) => {
        if (!(err instanceof ConflictError) && !(err instanceof NotFoundError))
          process.stderr.write(`kubelet ${key}: ${(err as Error).message}\n`);
      })
      .finally(() => {
        this.busy.delete(key);
        if (this.again.delete(key)) this.kick(key, current);
      });
    this.busy.set(key, run);
  }

  private async sync(pod: Pod): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    const name = pod.metadata?.name ?? '';
    const ns = pod.metadata?.namespace;
    const nodeName = pod.spec?.nodeName;
    if (pod.metadata?.deletionTimestamp) {
      if (!nodeName || !this.nodes.has(nodeName)) return;
      const l = this.launchers.get(uid);
      this.launchers.delete(uid);
      await l?.exit(0);
      await this.client.delete(PodType, name, {
        namespace: ns,
        gracePeriodSeconds: 0,
        preconditions: { uid },
      });
      this.writes.delete++;
      return;
    }
    if (!nodeName) {
      if (this.bindTo.length === 0) return;
      const to = this.bindTo[this.next++ % this.bindTo.length];
      await this.client.update(PodType, { ...pod, spec: { ...pod.spec!, nodeName: to } } as KubeObject);
      this.writes.bind++;
      return;
    }
    const node = this.nodes.get(nodeName);
    const phase = pod.status?.phase;
    if (!node || this.launchers.has(uid) || phase === 'Succeeded' || phase === 'Failed') return;
    const owner = pod.metadata?.ownerReferences?.find((r) => r.kind === 'VirtualMachineInstance');
    const real = podEmptyDirPath(node.podsRoot, uid, 'sockets');
    mkdirSync(real, { recursive: true });
    const launcher = new VirtLauncher({
      namespace: ns ?? 'default',
      name: owner?.name ?? '',
      uid: owner?.uid ?? '',
      gracePeriodSeconds: 5,
      socketDir: shortDir(real),
      connectDriver: async () => node.driver(),
      syncOptions: { useEmulation: true },
      finalWaitMs: 5_000,
      log: () => {},
    });
    this.launchers.set(uid, launcher);
    await launcher.start();
    void launcher.exited.then(() => this.finished(pod));
    const now = stamp();
    const n = ++this.ip;
    const podIP = `10.${128 + (n >> 16)}.${(n >> 8) & 255}.${n & 255}`;
    const cond = (type: string) => ({ type, status: 'True', lastProbeTime: null, lastTransitionTime: now });
    await this.client.updateStatus(PodType, {
      ...pod,
      status: {
        phase: 'Running',
        hostIP: '127.0.0.1',
        podIP,
        podIPs: [{ ip: podIP }],
        startTime: now,
        qosClass: 'Burstable',
        conditions: ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map(cond),
        containerStatuses: (pod.spec?.containers ?? []).map((c) => ({
          name: c.name,
          image: c.image,
          imageID: '',
          ready: true,
          restartCount: 0,
          started: true,
          state: { running: { startedAt: now } },
        })),
      },
    } as KubeObject);
    this.writes.status++;
  }

  /** The launcher exited on its own (its guest finished): the pod Succeeded. */
  private async finished(pod: Pod): Promise<void> {
    const uid = pod.metadata?.uid ?? '';
    if (!this.launchers.has(uid)) return;
    this.launchers.delete(uid);
    const now = await this.client
      .get<Pod & KubeObject>(PodType, pod.metadata?.name ?? '', pod.metadata?.namespace)
      .catch(() => undefined);
    if (!now || now.metadata?.uid !== uid) return;
    await this.client
      .updateStatus(PodType, { ...now, status: { ...now.status, phase: 'Succeeded' } } as KubeObject)
      .then(() => this.writes.status++)
      .catch(() => undefined);
  }
}
