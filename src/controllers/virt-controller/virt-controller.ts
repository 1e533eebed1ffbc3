/**
 * virt-controller: the cluster-wide controllers (VM, VMI, ReplicaSet, Pool, Migration)
 * composed on the reconcile primitives: shared informers feed rate-limited work queues,
 * each drained by a few workers calling a reconciler; informer handlers record the
 * expectations the reconcilers wait for. Runs against any `ObjectClient`: the embedded
 * store of local mode or a real API server.
 */
import type { ClusterConfig } from '../../api/config/cluster-config';
import { createClusterConfig } from '../../api/config/cluster-config';
import type { DataVolume } from '../../api/generated/cdi/types';
import type {
  VirtualMachine,
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
  VirtualMachineInstanceReplicaSet,
  VirtualMachinePool,
} from '../../api/generated/types';
import type { EventRecorder, KeyReconciler } from '../common/controller-ports';
import { asReconciler, lister } from '../common/controller-wiring';
import type { Pod } from '../common/pod';
import { VmiResource } from '../common/vmi-resource';
import { ControllerMetrics } from '../metrics/controller-metrics';
import type { Controller } from '../runtime/controller';
import { Expectations } from '../runtime/expectations';
import type { Informer, SharedInformerFactory } from '../runtime/informer';
import { Manager } from '../runtime/manager';
import {
  DataVolumeType,
  objectKey,
  PodType,
  VirtualMachineInstanceMigrationType,
  VirtualMachineInstanceReplicaSetType,
  VirtualMachineType,
} from '../runtime/resources';
import type { KubeObject, ResourceType } from '../runtime/types';
import { CREATED_BY_INDEX, UID_INDEX, VMI_NAME_INDEX, watchChildren } from './child-watch';
import { watchClaims } from './claim-watch';
import { workersFor } from './controller-threads';
import { watchDataVolumes } from './datavolume-watch';
import { watchInstancetypes } from './instancetype-watch';
import { controllerMetricsInputs } from './metrics-inputs';
import { MigrationController } from './migration/controller';
import { migrationPolicySource } from './migration/policy-wiring';
import { NetworkAttachmentWatch } from './network-attachment-watch';
import { wireNodeControllers } from './node/wiring';
import { PoolController, VirtualMachinePoolType } from './pool/controller';
import { ReplicaSetController } from './replicaset/controller';
import { networkAttachmentKeys } from './services/network-attachments';
import { type Claim, PersistentVolumeClaimType } from './services/volumes';
import { registerSnapshotControllers } from './snapshot/wiring';
import type { VirtControllerOptions, WriteRecord } from './virt-controller-options';
import { VmController } from './vm/controller';
import { VmiController } from './vmi/controller';
import { ATTACHMENT_POD_SELECTOR, HOTPLUG_VMI_UID_LABEL } from './vmi/hotplug-attachments';
import { wireWorkloadUpdater } from './workload-updater/wiring';

export type { VirtControllerOptions, WriteRecord } from './virt-controller-options';

/** Label selecting launcher pods. */
export const LAUNCHER_POD_SELECTOR = 'kubevirt.io=virt-launcher';

/** The virt-controller: start() it, stop() it. */
export class VirtController {
  /** The Manager running the controllers (informers, workers, leader election). */
  readonly manager: Manager;
  /** The controller's metrics (a source for `serveMetrics`), read from its caches on scrape. */
  readonly metrics = new ControllerMetrics();
  readonly informers: SharedInformerFactory;
  readonly vmExpectations = new Expectations();
  readonly vmiExpectations = new Expectations();
  readonly rsExpectations = new Expectations();
  readonly migrationExpectations = new Expectations();
  readonly poolExpectations = new Expectations();
  /** The Events recorder its controllers share (composition roots give it to controllers they add, e.g. CDI's). */
  readonly recorder: EventRecorder & { flush?: () => Promise<void> };
  private readonly vmInformer: Informer<KubeObject>;
  private readonly vmiInformer: Informer<KubeObject>;
  private readonly podInformer: Informer<KubeObject>;
  private readonly attachmentInformer: Informer<KubeObject>;
  private readonly vmLoop: Controller;
  private readonly vmiLoop: Controller;
  private readonly rsInformer: Informer<KubeObject>;
  private readonly rsLoop: Controller;
  private readonly migrationInformer: Informer<KubeObject>;
  private readonly migrationLoop: Controller;
  private poolInformer?: Informer<KubeObject>;
  private readonly claimInformer?: Informer<KubeObject>;
  private readonly dataVolumeInformer?: Informer<KubeObject>;
  private readonly nadWatch?: NetworkAttachmentWatch;
  private poolLoop?: Controller;

  constructor(readonly opts: VirtControllerOptions) {
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
    this.manager = new Manager({
      client,
      namespace: opts.namespace,
      leaderElection: opts.leaderElection,
      onLostLeadership: opts.onLostLeadership,
      queueMetrics: (name) => this.metrics.workqueues.sink(name),
    });
    this.recorder = opts.recorder ?? this.manager.eventRecorder('virt-controller');
    this.informers = this.manager.informers;
    const register = (name: string, forType: ResourceType, r: KeyReconciler) =>
      this.manager.addController({
        name,
        forType,
        reconciler: asReconciler(r),
        workers: this.workersFor(name),
        onError: (req, err) => onError(name, req.namespace ? `${req.namespace}/${req.name}` : req.name, err),
      });
    this.vmInformer = this.informers.informerFor(VirtualMachineType);
    this.vmiInformer = this.informers.informerFor(VmiResource);
    this.podInformer = this.informers.informerFor(PodType, { labelSelector: LAUNCHER_POD_SELECTOR });
    this.podInformer.indexer.addIndex(CREATED_BY_INDEX, (p) => {
      const v = p.metadata?.labels?.['kubevirt.io/created-by'];
      return v ? [v] : [];
    });
    // Volume hotplug's attachment pods (vmi/hotplug-attachments.ts), by the VMI they serve.
    this.attachmentInformer = this.informers.informerFor(PodType, { labelSelector: ATTACHMENT_POD_SELECTOR });
    this.attachmentInformer.indexer.addIndex(CREATED_BY_INDEX, (p) => {
      const v = p.metadata?.labels?.[HOTPLUG_VMI_UID_LABEL];
      return v ? [v] : [];
    });
    const record = (controller: string) => (kind: string, verb: WriteRecord['verb']) =>
      opts.onWrite?.({ controller, kind, verb });

    const vmis = lister<VirtualMachineInstance>(this.vmiInformer);
    this.claimInformer =
      opts.volumes || opts.snapshots ? this.informers.informerFor(PersistentVolumeClaimType) : undefined;
    const claims = this.claimInformer ? lister<Claim>(this.claimInformer) : undefined;
    this.dataVolumeInformer = opts.dataVolumeTemplates
      ? this.informers.informerFor(DataVolumeType)
      : undefined;
    // Watched only while the kind is served: a cluster without Multus's CRD must not block start.
    this.nadWatch = opts.networkAttachments
      ? new NetworkAttachmentWatch({
          client,
          informers: this.informers,
          log: opts.log,
          recheckMs: opts.networkAttachmentRecheckMs,
          // A definition appearing: the VMIs waiting for it render their pods.
          onChange: (n) => {
            const key = objectKey(n);
            for (const v of this.vmiInformer.indexer.list()) {
              if (networkAttachmentKeys(v as VirtualMachineInstance).includes(key))
                this.vmiLoop.queue.add(objectKey(v));
            }
          },
        })
      : undefined;
    const nads = this.nadWatch;
    this.vmiLoop = register(
      'vmi',
      VmiResource,
      new VmiController({
        client,
        recorder: this.recorder,
        vmis,
        pods: { byVmiUid: (uid) => this.podInformer.indexer.byIndex(CREATED_BY_INDEX, uid) as Pod[] },
        attachments: claims
          ? { byVmiUid: (uid) => this.attachmentInformer.indexer.byIndex(CREATED_BY_INDEX, uid) as Pod[] }
          : undefined,
        expectations: this.vmiExpectations,
        config,
        claims,
        nads,
        podOptions: opts.launcher,
        onWrite: record('vmi'),
      }),
    );
    const { catalog, revisions } = watchInstancetypes(this.informers, opts);
    this.vmLoop = register(
      'vm',
      VirtualMachineType,
      new VmController({
        client,
        recorder: this.recorder,
        vms: lister<VirtualMachine>(this.vmInformer),
        vmis,
        expectations: this.vmExpectations,
        config,
        claims,
        catalog,
        revisions,
        dataVolumes: this.dataVolumeInformer ? lister<DataVolume>(this.dataVolumeInformer) : undefined,
        onWrite: record('vm'),
      }),
    );
    this.rsInformer = this.informers.informerFor(VirtualMachineInstanceReplicaSetType);
    this.rsLoop = register(
      'replicaset',
      VirtualMachineInstanceReplicaSetType,
      new ReplicaSetController({
        client,
        recorder: this.recorder,
        replicaSets: lister<VirtualMachineInstanceReplicaSet>(this.rsInformer),
        vmis,
        expectations: this.rsExpectations,
        config,
        onWrite: record('replicaset'),
      }),
    );
    this.migrationInformer = this.informers.informerFor(VirtualMachineInstanceMigrationType);
    this.migrationInformer.indexer.addIndex(UID_INDEX, (m) => (m.metadata?.uid ? [m.metadata.uid] : []));
    this.migrationInformer.indexer.addIndex(VMI_NAME_INDEX, (m) => {
      const name = (m as VirtualMachineInstanceMigration).spec?.vmiName;
      return name ? [`${m.metadata?.namespace}/${name}`] : [];
    });
    this.migrationLoop = register(
      'migration',
      VirtualMachineInstanceMigrationType,
      new MigrationController({
        client,
        recorder: this.recorder,
        migrations: lister<VirtualMachineInstanceMigration>(this.migrationInformer),
        vmis,
        pods: { byVmiUid: (uid) => this.podInformer.indexer.byIndex(CREATED_BY_INDEX, uid) as Pod[] },
        expectations: this.migrationExpectations,
        config,
        podOptions: opts.launcher,
        ...migrationPolicySource(this.informers, client, opts.migrationPolicies),
        onWrite: record('migration'),
      }),
    );
    // Hotplug's migrations to launcher pods sized for the new resources, and an upgrade's
    // to launchers of the new image (./workload-updater).
    const { migrationInformer: mi, vmiInformer: vi, podInformer: pi, recorder: rec } = this;
    const wu = {
      client,
      recorder: rec,
      vmiInformer: vi,
      migrationInformer: mi,
      vmiNameIndex: VMI_NAME_INDEX,
      podInformer: pi,
      createdByIndex: CREATED_BY_INDEX,
      launcherImage: opts.launcher.launcherImage,
      config,
    };
    wireWorkloadUpdater({ ...wu, register, onWrite: record('workload-updater') });
    if (opts.pools) {
      this.poolInformer = this.informers.informerFor(VirtualMachinePoolType);
      this.poolLoop = register(
        'pool',
        VirtualMachinePoolType,
        new PoolController({
          client,
          recorder: this.recorder,
          pools: lister<VirtualMachinePool>(this.poolInformer),
          vms: lister<VirtualMachine>(this.vmInformer),
          vmis,
          expectations: this.poolExpectations,
          onWrite: record('pool'),
        }),
      );
    }
    // The per-Node controllers (node/wiring.ts): heartbeats and evacuation, when asked for.
    const { informers, vmiInformer, podInformer, migrationInformer, recorder } = this;
    const infs = { informers, vmiInformer, podInformer, migrationInformer, recorder };
    wireNodeControllers({ ...infs, client, register, config, onWrite: record('node') }, opts);
    if (opts.snapshots && this.claimInformer) {
      const [vmInformer, claimInformer, freezer] = [this.vmInformer, this.claimInformer, opts.freezer];
      registerSnapshotControllers({ ...infs, client, register, vmInformer, claimInformer, freezer });
    }
    this.wire(config);
  }

  private wire(config: () => ClusterConfig): void {
    const vmQ = this.vmLoop.queue;
    const vmiQ = this.vmiLoop.queue;
    // Each controller's own kind is wired by the Manager; here: children to owners.
    if (this.claimInformer) watchClaims(this.claimInformer, this.vmiInformer, this.vmInformer, vmiQ, vmQ);
    if (this.dataVolumeInformer) watchDataVolumes(this.dataVolumeInformer, this.vmInformer, vmQ);
    const { vmInformer, vmiInformer, podInformer, attachmentInformer, migrationInformer } = this;
    watchChildren({
      vmInformer,
      vmiInformer,
      podInformer,
      attachmentInformer,
      migrationInformer,
      vm: { queue: vmQ, expectations: this.vmExpectations },
      vmi: { queue: vmiQ, expectations: this.vmiExpectations },
      replicaSet: { queue: this.rsLoop.queue, expectations: this.rsExpectations },
      migration: { queue: this.migrationLoop.queue, expectations: this.migrationExpectations },
      ...(this.poolInformer && this.poolLoop
        ? { pool: { queue: this.poolLoop.queue, expectations: this.poolExpectations } }
        : {}),
    });
    const { manager } = this;
    this.metrics.observe(
      controllerMetricsInputs({ vmInformer, vmiInformer, migrationInformer, podInformer, manager, config }),
    );
  }

  /**
   * Workers of controller `name` (its group's `threads`, else `workers`, else upstream's
   * default): for the controllers composition roots add to this Manager too (vmexport).
   */
  workersFor(name: string): number {
    return workersFor(name, this.opts);
  }

  /** Starts the informers, waits for their caches (and the Lease, if any), then the workers. */
  async start(): Promise<void> {
    await this.nadWatch?.start();
    await this.manager.start();
  }

  /** Stops workers and informers, flushes events and releases the Lease. */
  async stop(): Promise<void> {
    this.nadWatch?.stop();
    await this.manager.stop();
    await this.recorder.flush?.();
  }
}
