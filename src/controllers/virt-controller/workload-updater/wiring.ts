/**
 * Wires the workload updater (./controller) into virt-controller: its own loop over VMIs
 * (queued by the Manager on their changes), and each migration's change queueing its VMI
 * (a workload-update migration's creation also meets the expectation of it).
 */
import type { VirtualMachineInstance, VirtualMachineInstanceMigration } from '../../../api/generated/types';
import type { EventRecorder, KeyReconciler } from '../../common/controller-ports';
import { lister } from '../../common/controller-wiring';
import { VmiResource } from '../../common/vmi-resource';
import type { Controller } from '../../runtime/controller';
import { Expectations } from '../../runtime/expectations';
import type { Informer } from '../../runtime/informer';
import type { KubeObject, ObjectClient, ResourceType } from '../../runtime/types';
import { WORKLOAD_UPDATE_ANNOTATION, WorkloadUpdateController } from './controller';

const FINAL = new Set(['Succeeded', 'Failed']);

/** What {@link wireWorkloadUpdater} needs from virt-controller. */
export interface WorkloadUpdaterWiring {
  client: ObjectClient;
  recorder: EventRecorder;
  vmiInformer: Informer<KubeObject>;
  migrationInformer: Informer<KubeObject>;
  /** The migration informer's index of `namespace/vmiName`. */
  vmiNameIndex: string;
  register(name: string, forType: ResourceType, r: KeyReconciler): Controller;
  onWrite?: (kind: string, verb: 'create') => void;
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
  const onMigration = (m: KubeObject, created: boolean) => {
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
