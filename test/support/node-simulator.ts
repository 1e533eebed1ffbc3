/**
 * A node simulator for controller tests and benchmarks: it plays kube-scheduler (binds
 * launcher pods to its node), the kubelet (marks them Running and Ready) and the node
 * agent (virt-handler: moves a Scheduled VMI on its node to Running, and a deleted one to
 * Succeeded), writing as few times as each real component would. It counts its writes by
 * role so tests can tell the controllers' writes from the simulated infrastructure's.
 */
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import type { Pod } from '../../src/controllers/common/pod';
import { VmiResource } from '../../src/controllers/common/vmi-resource';
import { ConflictError, NotFoundError } from '../../src/controllers/runtime/errors';
import { type Informer, SharedInformerFactory } from '../../src/controllers/runtime/informer';
import { objectKey, PodType } from '../../src/controllers/runtime/resources';
import type { KubeObject, ObjectClient } from '../../src/controllers/runtime/types';
import { LAUNCHER_POD_SELECTOR } from '../../src/controllers/virt-controller/virt-controller';

export type SimRole = 'scheduler' | 'kubelet' | 'handler';

export interface NodeSimulatorOptions {
  /** The simulated nodes (default one, `node01`). */
  nodeNames?: string[];
  /** Play kube-scheduler too (default true); false where a real kube-scheduler binds pods. */
  schedule?: boolean;
  /** Pods the scheduler leaves alone for now (e.g. waiting for volume binding); see `poke`. */
  hold?: (pod: Pod) => boolean;
  /** Pods that never get scheduled: the scheduler marks them Unschedulable instead. */
  unschedulable?: (pod: Pod) => string | undefined;
  /** VMIs whose guest fails to start: the handler reports Failed instead of Running. */
  failGuest?: (vmi: VirtualMachineInstance) => boolean;
  /** VMIs whose migration target launcher dies while it is prepared: the kubelet reports its pod Failed. */
  failTarget?: (vmi: VirtualMachineInstance) => boolean;
  /**
   * Informers to read pods and VMIs from. In a benchmark the simulator may share the
   * controller's (one cache instead of two in one process); by default it has its own,
   * as a separate node agent would.
   */
  informers?: SharedInformerFactory;
  /** Called after each write. */
  onWrite?: (role: SimRole, kind: 'Pod' | 'VirtualMachineInstance', name: string) => void;
}

const stamp = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

export class NodeSimulator {
  readonly nodeNames: string[];
  readonly writes: Record<SimRole, number> = { scheduler: 0, kubelet: 0, handler: 0 };
  private readonly factory: SharedInformerFactory;
  private readonly ownFactory: boolean;
  private readonly pods: Informer<KubeObject>;
  private readonly vmis: Informer<KubeObject>;
  private readonly inFlight = new Set<string>();
  private readonly rerun = new Map<string, () => Promise<void>>();
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly client: ObjectClient,
    private readonly opts: NodeSimulatorOptions = {},
  ) {
    this.nodeNames = opts.nodeNames ?? ['node01'];
    this.ownFactory = opts.informers === undefined;
    this.factory = opts.informers ?? new SharedInformerFactory(client);
    this.pods = this.factory.informerFor(PodType, { labelSelector: LAUNCHER_POD_SELECTOR });
    this.vmis = this.factory.informerFor(VmiResource);
    // Act on the object as cached when the work runs, not as it was in the event.
    const latest = (inf: Informer<KubeObject>, o: KubeObject) => inf.indexer.get(objectKey(o)) ?? o;
    const onPod = (o: KubeObject) =>
      this.spawn(`pod:${o.metadata?.uid}`, () => this.handlePod(latest(this.pods, o) as Pod));
    const onVmi = (o: KubeObject) =>
      this.spawn(`vmi:${o.metadata?.uid}`, () =>
        this.handleVmi(latest(this.vmis, o) as VirtualMachineInstance),
      );
    this.pods.addEventHandler({ onAdd: onPod, onUpdate: (_a, b) => onPod(b) });
    this.vmis.addEventHandler({ onAdd: onVmi, onUpdate: (_a, b) => onVmi(b) });
  }

  async start(): Promise<void> {
    if (this.ownFactory) this.factory.start();
    await this.factory.waitForCacheSync();
  }

  async stop(): Promise<void> {
    if (this.ownFactory) await this.factory.shutdown();
    await Promise.all([...this.pending]);
  }

  /**
   * Runs `fn` for an object, one run at a time per object; an event arriving meanwhile
   * reruns it afterwards (on the then-current cached state), as a work queue would.
   */
  private spawn(id: string, fn: () => Promise<void>): void {
    if (this.inFlight.has(id)) {
      this.rerun.set(id, fn);
      return;
    }
    this.inFlight.add(id);
    // Never write from inside a watch callback: the embedded store delivers the write's
    // event to the other watchers before the event being delivered now (out of order).
    const p = Promise.resolve()
      .then(fn)
      .catch((err) => {
        if (!(err instanceof ConflictError) && !(err instanceof NotFoundError))
          console.warn(`node simulator: ${(err as Error).message}`);
      })
      .finally(() => {
        this.inFlight.delete(id);
        this.pending.delete(p);
        const again = this.rerun.get(id);
        if (again) {
          this.rerun.delete(id);
          this.spawn(id, again);
        }
      });
    this.pending.add(p);
  }

  private count(role: SimRole, kind: 'Pod' | 'VirtualMachineInstance', name: string): void {
    this.writes[role]++;
    this.opts.onWrite?.(role, kind, name);
  }

  /** Scheduler: bind (one write). Kubelet: Running and Ready (one status write). */
  private async handlePod(pod: Pod): Promise<void> {
    const name = pod.metadata?.name ?? '';
    if (pod.metadata?.deletionTimestamp) {
      // Kubelet: the containers stopped, so the pod object goes (grace 0, as the kubelet does).
      if (this.nodeNames.includes(pod.spec?.nodeName ?? '')) {
        await this.client.delete(PodType, name, {
          namespace: pod.metadata.namespace,
          gracePeriodSeconds: 0,
          preconditions: { uid: pod.metadata.uid },
        });
        this.count('kubelet', 'Pod', name);
      }
      return;
    }
    if (!pod.spec?.nodeName && this.opts.schedule === false) return;
    if (!pod.spec?.nodeName && this.opts.hold?.(pod)) return;
    if (!pod.spec?.nodeName) {
      const reason = this.opts.unschedulable?.(pod);
      if (reason) {
        if (pod.status?.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'False')) return;
        await this.client.updateStatus(PodType, {
          ...pod,
          status: {
            phase: 'Pending',
            conditions: [
              {
                type: 'PodScheduled',
                status: 'False',
                reason: 'Unschedulable',
                message: reason,
                lastTransitionTime: stamp(),
              },
            ],
          },
        } as KubeObject);
        this.count('scheduler', 'Pod', name);
        return;
      }
      const bound = await this.client.update<Pod & KubeObject>(PodType, {
        ...pod,
        spec: { ...pod.spec!, nodeName: this.pickNode(pod) },
      } as Pod & KubeObject);
      this.count('scheduler', 'Pod', name);
      pod = bound;
    }
    if (
      !this.nodeNames.includes(pod.spec?.nodeName ?? '') ||
      pod.status?.phase === 'Running' ||
      pod.status?.phase === 'Succeeded' ||
      pod.status?.phase === 'Failed'
    )
      return;
    const now = stamp();
    const cond = (type: string) => ({
      type,
      status: 'True' as const,
      lastProbeTime: null,
      lastTransitionTime: now,
    });
    await this.client.updateStatus(PodType, {
      ...pod,
      status: {
        phase: 'Running',
        hostIP: '10.0.0.1',
        podIP: '10.244.0.10',
        startTime: now,
        qosClass: 'Burstable',
        conditions: [
          cond('PodScheduled'),
          cond('Initialized'),
          cond('kubevirt.io/virtual-machine-unpaused'),
          cond('ContainersReady'),
          cond('Ready'),
        ],
        containerStatuses: pod.spec!.containers.map((c) => ({
          name: c.name,
          ready: true,
          restartCount: 0,
          state: { running: { startedAt: now } },
        })),
      },
    } as KubeObject);
    this.count('kubelet', 'Pod', name);
  }

  /** Looks at every launcher pod again (after whatever held one changed). */
  poke(): void {
    for (const p of this.pods.indexer.list())
      this.spawn(`pod:${p.metadata?.uid}`, () =>
        this.handlePod((this.pods.indexer.get(objectKey(p)) ?? p) as Pod),
      );
  }

  /** The scheduler's choice: a migration target goes where no other launcher of its VMI runs. */
  private pickNode(pod: Pod): string {
    const vmiUid = pod.metadata?.labels?.['kubevirt.io/created-by'];
    const taken = new Set(
      this.pods.indexer
        .list()
        .filter(
          (p) =>
            p.metadata?.uid !== pod.metadata?.uid &&
            p.metadata?.labels?.['kubevirt.io/created-by'] === vmiUid,
        )
        .filter((p) => (p as Pod).status?.phase !== 'Succeeded' && (p as Pod).status?.phase !== 'Failed')
        .map((p) => (p as Pod).spec?.nodeName),
    );
    return this.nodeNames.find((n) => !taken.has(n)) ?? this.nodeNames[0];
  }

  /** Handler: Scheduled on this node -> Running with Ready (one write); deleted -> Succeeded. */
  private async handleVmi(vmi: VirtualMachineInstance): Promise<void> {
    const st = vmi.status ?? {};
    if (!this.nodeNames.includes(st.nodeName ?? '')) return;
    const now = stamp();
    const ms = st.migrationState;
    if (
      ms &&
      !ms.completed &&
      this.nodeNames.includes(ms.targetNode ?? '') &&
      !vmi.metadata?.deletionTimestamp
    ) {
      await this.migrate(vmi, now);
      return;
    }
    let phase: string | undefined;
    if (vmi.metadata?.deletionTimestamp && (st.phase === 'Running' || st.phase === 'Scheduled'))
      phase = 'Succeeded';
    else if (st.phase === 'Scheduled') phase = this.opts.failGuest?.(vmi) ? 'Failed' : 'Running';
    if (!phase) return;
    const next: VirtualMachineInstance = {
      ...vmi,
      metadata: { ...vmi.metadata },
      status: structuredClone(vmi.status ?? {}),
    };
    const s = next.status ?? {};
    next.status = s;
    s.phase = phase;
    s.phaseTransitionTimestamps = [
      ...(s.phaseTransitionTimestamps ?? []),
      { phase, phaseTransitionTimestamp: now },
    ];
    const others = (s.conditions ?? []).filter((c) => c.type !== 'Ready');
    // The Ready condition the VMI controller would copy from the pod: written here, with
    // the phase, so the controller has nothing left to write.
    const ready =
      phase === 'Running'
        ? { type: 'Ready', status: 'True', lastProbeTime: null, lastTransitionTime: now }
        : undefined;
    s.conditions = ready ? [...others, ready as never] : s.conditions;
    if (phase === 'Running') {
      s.interfaces = [{ name: 'default', ipAddress: '10.244.0.10', ipAddresses: ['10.244.0.10'] }];
      s.guestOSInfo = {};
      s.qosClass = 'Burstable';
    }
    await this.client.update(VmiResource, next as never);
    this.count('handler', 'VirtualMachineInstance', vmi.metadata?.name ?? '');
  }

  /**
   * Handlers of a migration: the target's reports its address (one VMI write), the
   * source's starts the migration (one) and, the data path being simulated, reports it
   * completed with the VMI now on the target node (one); the source pod then finishes.
   */
  private async migrate(vmi: VirtualMachineInstance, now: string): Promise<void> {
    const next: VirtualMachineInstance = {
      ...vmi,
      metadata: { ...vmi.metadata },
      status: structuredClone(vmi.status ?? {}),
    };
    const st = next.status!;
    const ms = st.migrationState!;
    if (!ms.targetNodeAddress && this.opts.failTarget?.(vmi)) {
      const target = this.pods.indexer.list().find((p) => p.metadata?.name === ms.targetPod) as
        | Pod
        | undefined;
      if (target && target.status?.phase !== 'Failed') {
        await this.client.updateStatus(PodType, {
          ...target,
          status: {
            ...target.status,
            phase: 'Failed',
            containerStatuses: [{ name: 'compute', state: { terminated: { exitCode: 1 } } }],
          },
        } as KubeObject);
        this.count('kubelet', 'Pod', target.metadata?.name ?? '');
      }
      return;
    }
    if (!ms.targetNodeAddress) {
      ms.targetNodeAddress = '10.0.0.2';
      ms.targetNodeDomainDetected = true;
    } else if (!ms.startTimestamp) {
      ms.startTimestamp = now;
    } else {
      ms.completed = true;
      ms.endTimestamp = now;
      const source = st.nodeName;
      st.nodeName = ms.targetNode;
      const labels: Record<string, string> = {
        ...(next.metadata?.labels ?? {}),
        'kubevirt.io/nodeName': ms.targetNode ?? '',
      };
      delete labels['kubevirt.io/migrationTargetNodeName'];
      next.metadata = { ...next.metadata, labels };
      await this.client.update(VmiResource, next as never);
      this.count('handler', 'VirtualMachineInstance', vmi.metadata?.name ?? '');
      // The source launcher exits once its domain has moved.
      const sourcePod = this.pods.indexer
        .list()
        .find(
          (p) =>
            p.metadata?.labels?.['kubevirt.io/created-by'] === vmi.metadata?.uid &&
            (p as Pod).spec?.nodeName === source,
        ) as Pod | undefined;
      if (sourcePod) {
        await this.client.updateStatus(PodType, {
          ...sourcePod,
          status: { ...sourcePod.status, phase: 'Succeeded' },
        } as KubeObject);
        this.count('kubelet', 'Pod', sourcePod.metadata?.name ?? '');
      }
      return;
    }
    await this.client.update(VmiResource, next as never);
    this.count('handler', 'VirtualMachineInstance', vmi.metadata?.name ?? '');
  }
}
