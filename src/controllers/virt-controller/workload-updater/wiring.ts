/**
 * Wires the workload updater into virt-controller: hotplug's loop over VMIs (./controller,
 * queued by the Manager on their changes, and each migration's change queueing its VMI)
 * and the upgrade's loop over the KubeVirt CR (./outdated, queued by the CR's changes and
 * by any VMI or migration change). A workload-update migration's creation meets the
 * expectation of whichever loop made it.
 */
import type { ClusterConfig } from '../../../api/config/cluster-config';
import type {
  KubeVirt,
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from '../../../api/generated/types';
import { Labels } from '../../../api/labels';
import type { EventRecorder, KeyReconciler } from '../../common/controller-ports';
import { lister } from '../../common/controller-wiring';
import { evictPod } from '../../common/evict-pod';
import type { Pod } from '../../common/pod';
import { VmiResource } from '../../common/vmi-resource';
import type { Controller } from '../../runtime/controller';
import { Expectations } from '../../runtime/expectations';
import type { Informer } from '../../runtime/informer';
import { KubeVirtType, objectKey } from '../../runtime/resources';
import type { KubeObject, ObjectClient, ResourceType } from '../../runtime/types';
import { WORKLOAD_UPDATE_ANNOTATION, WorkloadUpdateController } from './controller';
import { OutdatedLauncherUpdater } from './outdated';

const FINAL = new Set(['Succeeded', 'Failed']);

/** What {@link wireWorkloadUpdater} needs from virt-controller. */
export interface WorkloadUpdaterWiring {
  client: ObjectClient;
  recorder: EventRecorder;
  vmiInformer: Informer<KubeObject>;
  migrationInformer: Informer<KubeObject>;
  /** The migration informer's index of `namespace/vmiName`. */
  vmiNameIndex: string;
  /** The launcher pods' informer, and its index of the creating VMI's uid. */
  podInformer: Informer<KubeObject>;
  createdByIndex: string;
  launcherImage: string;
  config: () => ClusterConfig;
  register(name: string, forType: ResourceType, r: KeyReconciler): Controller;
  onWrite?: (kind: string, verb: 'create' | 'patch') => void;
}

/** Registers the workload updater. */
export function wireWorkloadUpdater(w: WorkloadUpdaterWiring): Controller {
  const expectations = new Expectations();
  const loop = w.register(
    'workload-updater',
    VmiResource,
    new WorkloadUpdateController({
      client: w.client,
      recorder: w.recorder,
      vmis: lister<VirtualMachineInstance>(w.vmiInformer),
      unfinishedMigrations: (ns, name) =>
        (
          w.migrationInformer.indexer.byIndex(
            w.vmiNameIndex,
            `${ns}/${name}`,
          ) as VirtualMachineInstanceMigration[]
        ).filter((m) => !FINAL.has(m.status?.phase ?? '')),
      expectations,
      onWrite: w.onWrite,
    }),
  );
  const upgrade = wireOutdated(w);
  const onMigration = (m: KubeObject, created: boolean) => {
    upgrade.touch(created && m.metadata?.annotations?.[WORKLOAD_UPDATE_ANNOTATION] !== undefined);
    const name = (m as VirtualMachineInstanceMigration).spec?.vmiName;
    if (!name) return;
    const key = `${m.metadata?.namespace}/${name}`;
    if (created && m.metadata?.annotations?.[WORKLOAD_UPDATE_ANNOTATION] !== undefined)
      expectations.creationObserved(key);
    loop.queue.add(key);
  };
  w.migrationInformer.addEventHandler({
    onAdd: (m) => onMigration(m, true),
    onUpdate: (_a, m) => onMigration(m, false),
    onDelete: (m) => onMigration(m, false),
  });
  return loop;
}

/**
 * The upgrade loop; `touch` queues every KubeVirt CR (a VMI or migration changed), telling
 * it when a workload-update migration appeared (the expectation of it is met: the hotplug
 * loop's key is the VMI's, this one's the CR's; an unexpected observation is a no-op).
 */
function wireOutdated(w: WorkloadUpdaterWiring): { touch(createdWorkloadUpdate: boolean): void } {
  const expectations = new Expectations();
  const unfinished = () =>
    (w.migrationInformer.indexer.list() as VirtualMachineInstanceMigration[]).filter(
      (m) => !FINAL.has(m.status?.phase ?? ''),
    );
  // The CRs come from the loop's own informer (the Manager makes it for the loop's kind).
  let crs: Informer<KubeObject> | undefined;
  const kubevirts = {
    get: (key: string) => crs?.indexer.get(key) as KubeVirt | undefined,
    list: () => (crs?.indexer.list() ?? []) as KubeVirt[],
  };
  const loop = w.register(
    'workload-updater-outdated',
    KubeVirtType,
    new OutdatedLauncherUpdater({
      client: w.client,
      recorder: w.recorder,
      kubevirts,
      vmis: lister<VirtualMachineInstance>(w.vmiInformer),
      unfinishedMigrations: unfinished,
      currentPod: (vmi) =>
        (w.podInformer.indexer.byIndex(w.createdByIndex, vmi.metadata?.uid ?? '') as Pod[]).find(
          (p) => p.spec?.nodeName === vmi.status?.nodeName && !p.metadata?.deletionTimestamp,
        ),
      evict: (pod) => evictPod(w.client, pod.metadata?.namespace ?? '', pod.metadata?.name ?? ''),
      launcherImage: w.launcherImage,
      parallelMigrationsPerCluster: () => w.config().migrations.parallelMigrationsPerCluster ?? 5,
      expectations,
      onWrite: w.onWrite,
    }),
  );
  crs = loop.informer;
  const touch = (createdWorkloadUpdate: boolean) => {
    for (const kv of loop.informer.indexer.list()) {
      const key = objectKey(kv);
      if (createdWorkloadUpdate) expectations.creationObserved(key);
      loop.queue.add(key);
    }
  };
  // Only VMIs that are or were outdated change the count or the work left.
  const outdated = (v: KubeObject) => v.metadata?.labels?.[Labels.outdatedLauncherImage] !== undefined;
  w.vmiInformer.addEventHandler({
    onAdd: (v) => outdated(v) && touch(false),
    onUpdate: (a, b) => (outdated(a) || outdated(b)) && touch(false),
    onDelete: (v) => outdated(v) && touch(false),
  });
  return { touch };
}
