/**
 * The scale benchmark's workload: N VirtualMachines (runStrategy Always, no disks and no
 * pod network (autoattachPodInterface false), so the fake driver needs nothing on the node) created with bounded
 * concurrency, the time each VMI is first seen Running by watch, and deleting them all
 * while counting what is left.
 */
import type { VirtualMachine, VirtualMachineInstance } from '../../src/api/generated/types';
import type { Pod } from '../../src/controllers/common/pod';
import { VmiResource } from '../../src/controllers/common/vmi-resource';
import { type Informer, SharedInformerFactory } from '../../src/controllers/runtime/informer';
import { PodType, VirtualMachineType } from '../../src/controllers/runtime/resources';
import type { KubeObject, ObjectClient } from '../../src/controllers/runtime/types';
import { LAUNCHER_POD_SELECTOR } from '../../src/controllers/virt-controller/virt-controller';

export const NS = 'default';

function vm(i: number): VirtualMachine {
  const name = `scale-vm-${i}`;
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name, namespace: NS },
    spec: {
      runStrategy: 'Always',
      template: {
        metadata: { labels: { 'kubevirt.io/vm': name } },
        // No pod network: simulated pods have no network namespace to wire a guest into.
        spec: {
          domain: { devices: { autoattachPodInterface: false }, resources: { requests: { memory: '64Mi' } } },
        },
      },
    },
  };
}

/** Runs `fn` for 0..n-1, at most `limit` at a time. */
export async function forEachLimited(
  n: number,
  limit: number,
  fn: (i: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, n) }, async () => {
      while (next < n) await fn(next++);
    }),
  );
}

/** Watches VMIs and records when each is first seen Running. */
export class RunningWatch {
  readonly runningAt = new Map<string, number>();
  /** When each VMI was first seen Scheduled (its launcher pod Running): splits controller from handler time. */
  readonly scheduledAt = new Map<string, number>();
  /** When each VMI's launcher pod was first seen, and first seen Running (by VMI name). */
  readonly podSeenAt = new Map<string, number>();
  readonly podRunningAt = new Map<string, number>();
  private readonly factory: SharedInformerFactory;
  private waiters: Array<() => void> = [];
  /** The caches the delete is followed by (VMs, VMIs, launcher pods). */
  private readonly caches: Array<{ kind: string; informer: Informer }> = [];

  constructor(client: ObjectClient) {
    this.factory = new SharedInformerFactory(client);
    const seen = (o: KubeObject) => {
      const v = o as VirtualMachineInstance;
      const name = v.metadata?.name ?? '';
      if (v.status?.phase === 'Scheduled' && !this.scheduledAt.has(name))
        this.scheduledAt.set(name, performance.now());
      if (v.status?.phase === 'Running' && !this.runningAt.has(name)) {
        this.runningAt.set(name, performance.now());
        for (const w of this.waiters) w();
      }
    };
    const vmis = this.factory.informerFor(VmiResource, { namespace: NS });
    vmis.addEventHandler({ onAdd: seen, onUpdate: (_a, b) => seen(b) });
    const pod = (o: KubeObject) => {
      const vmi = o.metadata?.ownerReferences?.find((r) => r.kind === 'VirtualMachineInstance')?.name;
      if (!vmi) return;
      if (!this.podSeenAt.has(vmi)) this.podSeenAt.set(vmi, performance.now());
      if ((o as Pod).status?.phase === 'Running' && !this.podRunningAt.has(vmi))
        this.podRunningAt.set(vmi, performance.now());
    };
    const pods = this.factory.informerFor(PodType, { namespace: NS, labelSelector: LAUNCHER_POD_SELECTOR });
    pods.addEventHandler({ onAdd: pod, onUpdate: (_a, b) => pod(b) });
    const vms = this.factory.informerFor(VirtualMachineType, { namespace: NS });
    this.caches.push(
      { kind: 'vms', informer: vms },
      { kind: 'vmis', informer: vmis as Informer },
      { kind: 'pods', informer: pods },
    );
  }

  /** What the watch's caches still hold: VMs, VMIs, launcher pods, and those with finalizers. */
  left(): Record<string, number> {
    const out: Record<string, number> = {};
    let withFinalizers = 0;
    for (const { kind, informer } of this.caches) {
      const items = informer.indexer.list();
      out[kind] = items.length;
      withFinalizers += items.filter((o) => (o.metadata?.finalizers ?? []).length > 0).length;
    }
    return { ...out, with_finalizers: withFinalizers };
  }

  async start(): Promise<void> {
    this.factory.start();
    await this.factory.waitForCacheSync();
  }

  /** Resolves true once `n` VMIs were seen Running, false after `timeoutMs`. */
  waitFor(n: number, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const check = () => {
        if (this.runningAt.size >= n) {
          clearTimeout(timer);
          this.waiters = this.waiters.filter((w) => w !== check);
          resolve(true);
        }
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== check);
        resolve(false);
      }, timeoutMs);
      this.waiters.push(check);
      check();
    });
  }

  stop(): Promise<void> {
    return this.factory.shutdown();
  }
}

/** Creates the N VMs; returns each one's create-call start time by name. */
export async function createVms(client: ObjectClient, n: number): Promise<Map<string, number>> {
  const created = new Map<string, number>();
  await forEachLimited(n, 100, async (i) => {
    const obj = vm(i);
    created.set(obj.metadata!.name!, performance.now());
    await client.create(VirtualMachineType, obj as KubeObject);
  });
  return created;
}

/** What is left: VMs, VMIs, launcher pods, and objects of those still holding finalizers. */
export async function leftovers(client: ObjectClient): Promise<Record<string, number>> {
  const [vms, vmis, pods] = await Promise.all([
    client.list(VirtualMachineType, { namespace: NS }),
    client.list(VmiResource, { namespace: NS }),
    client.list(PodType, { namespace: NS, labelSelector: LAUNCHER_POD_SELECTOR }),
  ]);
  const all = [...vms.items, ...vmis.items, ...pods.items];
  return {
    vms: vms.items.length,
    vmis: vmis.items.length,
    pods: pods.items.length,
    with_finalizers: all.filter((o) => (o.metadata?.finalizers ?? []).length > 0).length,
  };
}

/**
 * Deletes the N VMs and waits until `watch`'s caches hold nothing; then lists once to count
 * what is left at the API (the figure reported). Seconds taken, or undefined on timeout.
 * (Polling with lists, three of N objects a second, had been much of the embedded store's
 * work during a 10,000-VM delete.)
 */
export async function deleteAll(
  client: ObjectClient,
  watch: RunningWatch,
  n: number,
  timeoutMs: number,
): Promise<{ seconds?: number; left: Record<string, number> }> {
  const t0 = performance.now();
  await forEachLimited(n, 100, async (i) => {
    await client.delete(VirtualMachineType, `scale-vm-${i}`, { namespace: NS }).catch(() => undefined);
  });
  for (;;) {
    const empty = Object.values(watch.left()).every((v) => v === 0);
    const seconds = (performance.now() - t0) / 1000;
    if (empty || performance.now() - t0 > timeoutMs) {
      const left = await leftovers(client);
      const none = Object.values(left).every((v) => v === 0);
      // The caches may trail the API by a moment; the API's count is the one reported.
      if (none) return { seconds, left };
      if (performance.now() - t0 > timeoutMs) return { left };
    }
    await new Promise((r) => setTimeout(r, 200));
  }
}
