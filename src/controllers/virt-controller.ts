/**
 * virt-controller: the cluster-wide controllers (VM, VMI, ReplicaSet, Pool, Migration)
 * composed on the reconcile primitives: shared informers feed rate-limited work queues,
 * each drained by a few workers calling a reconciler; informer handlers record the
 * expectations the reconcilers wait for. Runs against any `ObjectClient`: the embedded
 * store of local mode or a real API server.
 */
import type { ClusterConfig } from '../api/config/cluster-config';
import { createClusterConfig } from '../api/config/cluster-config';
import type {
  VirtualMachine,
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
  VirtualMachineInstanceReplicaSet,
  VirtualMachinePool,
} from '../api/generated/types';
import { kinds } from '../api/groups';
import {
  createInstancetypeCatalog,
  type InstancetypeCatalog,
  InstancetypeKinds,
} from '../api/instancetype/catalog';
import { MigrationController } from './migration/controller';
import { PoolController, VirtualMachinePoolType } from './pool/controller';
import { ReplicaSetController } from './replicaset/controller';
import { EventRecorder as RuntimeEventRecorder } from './runtime/event-recorder';
import { Expectations } from './runtime/expectations';
import { type Informer, SharedInformerFactory } from './runtime/informer';
import {
  objectKey,
  PodType,
  VirtualMachineInstanceMigrationType,
  VirtualMachineInstanceReplicaSetType,
  VirtualMachineType,
} from './runtime/resources';
import type { KubeObject, ObjectClient, OwnerReference } from './runtime/types';
import { WorkQueue } from './runtime/workqueue';
import type { Pod } from './services/pod';
import type { LauncherPodOptions } from './services/pod-renderer';
import type { EventRecorder, KeyReconciler, Lister } from './services/ports';
import { VmController } from './vm/controller';
import { VmiController, VmiResource } from './vmi/controller';

/** Label selecting launcher pods. */
export const LAUNCHER_POD_SELECTOR = 'kubevirt.io=virt-launcher';
const CREATED_BY_INDEX = 'createdBy';
const UID_INDEX = 'uid';
const VMI_NAME_INDEX = 'vmiName';

/** A write made by a controller, for tests and benchmarks that count them. */
export interface WriteRecord {
  controller: string;
  kind: string;
  verb: 'create' | 'update' | 'delete';
}

export interface VirtControllerOptions {
  client: ObjectClient;
  /** The cluster configuration (a function to follow KubeVirt CR changes). */
  config?: ClusterConfig | (() => ClusterConfig);
  /** Launcher image and hypervisor choices for launcher pods. */
  launcher: LauncherPodOptions;
  /** Workers per controller (default 4). */
  workers?: number;
  /** Restrict to one namespace (default: all). */
  namespace?: string;
  /** Event recorder (default: core/v1 Events through `client`, component virt-controller). */
  recorder?: EventRecorder;
  /** Instance types and preferences for VMs that reference them (overrides `instancetypes`). */
  catalog?: () => InstancetypeCatalog;
  /**
   * Watch the instancetype.kubevirt.io kinds and expand VMs with them (default false: the
   * kinds must be served, i.e. their CRDs installed or the embedded store told about them).
   */
  instancetypes?: boolean;
  /**
   * Run the VirtualMachinePool controller (default false: the pool.kubevirt.io kind must
   * be served, i.e. its CRD installed or the embedded store told about it).
   */
  pools?: boolean;
  /** Called for every write the controllers make. */
  onWrite?: (w: WriteRecord) => void;
  /** Reports reconcile errors (default console.warn). */
  onError?: (controller: string, key: string, err: Error) => void;
}

function controllerOf(obj: KubeObject): OwnerReference | undefined {
  return obj.metadata?.ownerReferences?.find((r) => r.controller);
}

function ownerKey(obj: KubeObject, kind: string): string | undefined {
  const ref = controllerOf(obj);
  if (!ref || ref.kind !== kind) return undefined;
  return `${obj.metadata?.namespace}/${ref.name}`;
}

function lister<T>(inf: Informer<KubeObject>): Lister<T> {
  return {
    get: (key) => inf.indexer.get(key) as T | undefined,
    list: (ns) => (ns ? inf.indexer.byIndex('namespace', ns) : inf.indexer.list()) as T[],
  };
}

/** One controller: a queue drained by workers calling its reconciler. */
class Loop {
  readonly queue = new WorkQueue<string>();
  private workers: Promise<void>[] = [];

  constructor(
    readonly name: string,
    private readonly reconciler: KeyReconciler,
    private readonly onError: (controller: string, key: string, err: Error) => void,
  ) {}

  start(n: number): void {
    for (let i = 0; i < n; i++) this.workers.push(this.work());
  }

  private async work(): Promise<void> {
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      try {
        const r = await this.reconciler.reconcile(key);
        this.queue.forget(key);
        if (r?.requeueAfterMs !== undefined) this.queue.addAfter(key, r.requeueAfterMs);
      } catch (err) {
        this.onError(this.name, key, err as Error);
        this.queue.addRateLimited(key);
      } finally {
        this.queue.done(key);
      }
    }
  }

  async stop(): Promise<void> {
    this.queue.shutDown();
    await Promise.all(this.workers);
  }
}

/** The virt-controller: start() it, stop() it. */
export class VirtController {
  readonly informers: SharedInformerFactory;
  readonly vmExpectations = new Expectations();
  readonly vmiExpectations = new Expectations();
  readonly rsExpectations = new Expectations();
  readonly migrationExpectations = new Expectations();
  readonly poolExpectations = new Expectations();
  private readonly loops: Loop[] = [];
  private readonly recorder: EventRecorder & { flush?: () => Promise<void> };
  private readonly vmInformer: Informer<KubeObject>;
  private readonly vmiInformer: Informer<KubeObject>;
  private readonly podInformer: Informer<KubeObject>;
  private readonly vmLoop: Loop;
  private readonly vmiLoop: Loop;
  private readonly rsInformer: Informer<KubeObject>;
  private readonly rsLoop: Loop;
  private readonly migrationInformer: Informer<KubeObject>;
  private readonly migrationLoop: Loop;
  private poolInformer?: Informer<KubeObject>;
  private poolLoop?: Loop;

  constructor(private readonly opts: VirtControllerOptions) {
    const client = opts.client;
    const cfg = opts.config;
    const config =
      typeof cfg === 'function'
        ? cfg
        : (() => {
            const c = cfg ?? createClusterConfig();
            return () => c;
          })();
    const onError = opts.onError ?? ((c, k, e) => console.warn(`${c} ${k}: ${e.message}`));
    this.recorder = opts.recorder ?? new RuntimeEventRecorder(client, { component: 'virt-controller' });
    this.informers = new SharedInformerFactory(client, { namespace: opts.namespace });
    this.vmInformer = this.informers.informerFor(VirtualMachineType);
    this.vmiInformer = this.informers.informerFor(VmiResource);
    this.podInformer = this.informers.informerFor(PodType, { labelSelector: LAUNCHER_POD_SELECTOR });
    this.podInformer.indexer.addIndex(CREATED_BY_INDEX, (p) => {
      const v = p.metadata?.labels?.['kubevirt.io/created-by'];
      return v ? [v] : [];
    });
    const record = (controller: string) => (kind: string, verb: WriteRecord['verb']) =>
      opts.onWrite?.({ controller, kind, verb });

    const vmis = lister<VirtualMachineInstance>(this.vmiInformer);
    this.vmiLoop = new Loop(
      'vmi',
      new VmiController({
        client,
        recorder: this.recorder,
        vmis,
        pods: { byVmiUid: (uid) => this.podInformer.indexer.byIndex(CREATED_BY_INDEX, uid) as Pod[] },
        expectations: this.vmiExpectations,
        config,
        podOptions: opts.launcher,
        onWrite: record('vmi'),
      }),
      onError,
    );
    this.vmLoop = new Loop(
      'vm',
      new VmController({
        client,
        recorder: this.recorder,
        vms: lister<VirtualMachine>(this.vmInformer),
        vmis,
        expectations: this.vmExpectations,
        config,
        catalog: opts.catalog ?? (opts.instancetypes ? this.instancetypeCatalog() : undefined),
        onWrite: record('vm'),
      }),
      onError,
    );
    this.rsInformer = this.informers.informerFor(VirtualMachineInstanceReplicaSetType);
    this.rsLoop = new Loop(
      'replicaset',
      new ReplicaSetController({
        client,
        recorder: this.recorder,
        replicaSets: lister<VirtualMachineInstanceReplicaSet>(this.rsInformer),
        vmis,
        expectations: this.rsExpectations,
        config,
        onWrite: record('replicaset'),
      }),
      onError,
    );
    this.migrationInformer = this.informers.informerFor(VirtualMachineInstanceMigrationType);
    this.migrationInformer.indexer.addIndex(UID_INDEX, (m) => (m.metadata?.uid ? [m.metadata.uid] : []));
    this.migrationInformer.indexer.addIndex(VMI_NAME_INDEX, (m) => {
      const name = (m as VirtualMachineInstanceMigration).spec?.vmiName;
      return name ? [`${m.metadata?.namespace}/${name}`] : [];
    });
    this.migrationLoop = new Loop(
      'migration',
      new MigrationController({
        client,
        recorder: this.recorder,
        migrations: lister<VirtualMachineInstanceMigration>(this.migrationInformer),
        vmis,
        pods: { byVmiUid: (uid) => this.podInformer.indexer.byIndex(CREATED_BY_INDEX, uid) as Pod[] },
        expectations: this.migrationExpectations,
        config,
        podOptions: opts.launcher,
        onWrite: record('migration'),
      }),
      onError,
    );
    this.loops.push(this.vmLoop, this.vmiLoop, this.rsLoop, this.migrationLoop);
    if (opts.pools) {
      this.poolInformer = this.informers.informerFor(VirtualMachinePoolType);
      this.poolLoop = new Loop(
        'pool',
        new PoolController({
          client,
          recorder: this.recorder,
          pools: lister<VirtualMachinePool>(this.poolInformer),
          vms: lister<VirtualMachine>(this.vmInformer),
          expectations: this.poolExpectations,
          onWrite: record('pool'),
        }),
        onError,
      );
      this.loops.push(this.poolLoop);
    }
    this.wire();
  }

  /** A catalog over informers of the four instancetype kinds (built on use). */
  private instancetypeCatalog(): () => InstancetypeCatalog {
    const wanted = Object.values(InstancetypeKinds) as string[];
    const infs = kinds
      .filter((k) => k.group === 'instancetype.kubevirt.io' && wanted.includes(k.kind))
      .map((k) =>
        this.informers.informerFor(
          {
            group: k.group,
            version: k.version,
            kind: k.kind,
            plural: k.plural,
            namespaced: k.namespaced,
            statusSubresource: false,
          },
          {},
        ),
      );
    // List items from an API server carry no kind: the catalog needs it.
    return () =>
      createInstancetypeCatalog(
        infs.flatMap((inf) => inf.indexer.list().map((o) => ({ ...o, kind: inf.type.kind }))),
      );
  }

  private wire(): void {
    const vmQ = this.vmLoop.queue;
    const vmiQ = this.vmiLoop.queue;
    const selfKeyed = (inf: Informer<KubeObject>, q: WorkQueue<string>) =>
      inf.addEventHandler({
        onAdd: (o) => q.add(objectKey(o)),
        onUpdate: (_a, b) => q.add(objectKey(b)),
        onDelete: (o) => q.add(objectKey(o)),
      });
    selfKeyed(this.vmInformer, vmQ);
    if (this.poolInformer && this.poolLoop) {
      const poolQ = this.poolLoop.queue;
      selfKeyed(this.poolInformer, poolQ);
      const toPool = (vm: KubeObject, observed?: 'creation' | 'deletion') => {
        const k = ownerKey(vm, 'VirtualMachinePool');
        if (!k) return;
        if (observed === 'creation') this.poolExpectations.creationObserved(k);
        if (observed === 'deletion') this.poolExpectations.deletionObserved(k);
        poolQ.add(k);
      };
      this.vmInformer.addEventHandler({
        onAdd: (o) => toPool(o, 'creation'),
        onUpdate: (_a, b) => toPool(b),
        onDelete: (o) => toPool(o, 'deletion'),
      });
    }
    selfKeyed(this.rsInformer, this.rsLoop.queue);
    // VMI owners: their controller reconciles on every VMI change and counts its creates/deletes.
    const owners: Array<{ kind: string; queue: WorkQueue<string>; expectations: Expectations }> = [
      { kind: 'VirtualMachine', queue: vmQ, expectations: this.vmExpectations },
      {
        kind: 'VirtualMachineInstanceReplicaSet',
        queue: this.rsLoop.queue,
        expectations: this.rsExpectations,
      },
    ];
    const toOwner = (o: KubeObject, observed?: 'creation' | 'deletion') => {
      for (const ow of owners) {
        const k = ownerKey(o, ow.kind);
        if (!k) continue;
        if (observed === 'creation') ow.expectations.creationObserved(k);
        if (observed === 'deletion') ow.expectations.deletionObserved(k);
        ow.queue.add(k);
      }
    };
    const migQ = this.migrationLoop.queue;
    selfKeyed(this.migrationInformer, migQ);
    const toMigrations = (vmi: KubeObject) => {
      for (const m of this.migrationInformer.indexer.byIndex(VMI_NAME_INDEX, objectKey(vmi)))
        migQ.add(objectKey(m));
    };
    this.vmiInformer.addEventHandler({
      onAdd: (o) => {
        vmiQ.add(objectKey(o));
        toOwner(o, 'creation');
        toMigrations(o);
      },
      onUpdate: (_a, b) => {
        vmiQ.add(objectKey(b));
        toOwner(b);
        toMigrations(b);
      },
      onDelete: (o) => {
        vmiQ.add(objectKey(o));
        toOwner(o, 'deletion');
      },
    });
    // Launcher pods: their VMI reconciles; migration target pods also their migration.
    const podEvent = (p: KubeObject, observed?: 'creation' | 'deletion') => {
      const vmiKey = ownerKey(p, 'VirtualMachineInstance');
      const jobUid = p.metadata?.labels?.['kubevirt.io/migrationJobUID'];
      if (jobUid) {
        for (const m of this.migrationInformer.indexer.byIndex(UID_INDEX, jobUid)) {
          const k = objectKey(m);
          if (observed === 'creation') this.migrationExpectations.creationObserved(k);
          migQ.add(k);
        }
      } else if (vmiKey) {
        if (observed === 'creation') this.vmiExpectations.creationObserved(vmiKey);
        if (observed === 'deletion') this.vmiExpectations.deletionObserved(vmiKey);
      }
      if (vmiKey) vmiQ.add(vmiKey);
    };
    this.podInformer.addEventHandler({
      onAdd: (p) => podEvent(p, 'creation'),
      onUpdate: (_a, p) => podEvent(p),
      onDelete: (p) => podEvent(p, 'deletion'),
    });
  }

  /** Starts the informers, waits for their caches, then the workers. */
  async start(): Promise<void> {
    this.informers.start();
    await this.informers.waitForCacheSync();
    for (const l of this.loops) l.start(this.opts.workers ?? 4);
  }

  /** Stops workers and informers and waits for pending events to be written. */
  async stop(): Promise<void> {
    await Promise.all(this.loops.map((l) => l.stop()));
    await this.informers.shutdown();
    await this.recorder.flush?.();
  }
}
