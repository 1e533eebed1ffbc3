/**
 * Wires the events of the objects virt-controller's controllers own to the owners' queues
 * (each controller's own kind is wired by the Manager): VMIs to their VM, ReplicaSet and
 * migrations, launcher and attachment pods to their VMI and migration, VMs and their VMIs
 * to their pool; and counts the creations and deletions each owner's expectations wait
 * for. Apart from the composition root (virt-controller.ts), which only builds the parts.
 */
import type { VirtualMachineInstanceMigration } from '../../api/generated/types';
import { ownerKey } from '../common/controller-wiring';
import type { Expectations } from '../runtime/expectations';
import type { Informer } from '../runtime/informer';
import { objectKey } from '../runtime/resources';
import type { KubeObject } from '../runtime/types';
import type { WorkQueue } from '../runtime/workqueue';
import { isMigrationFinal } from './migration/phases';
import { HOTPLUG_VMI_ANNOTATION } from './vmi/hotplug-attachments';

/** Index of launcher and attachment pods by the UID of the VMI they serve. */
export const CREATED_BY_INDEX = 'createdBy';
/** Index of migrations by their UID (a migration target pod's `kubevirt.io/migrationJobUID`). */
export const UID_INDEX = 'uid';
/** Index of migrations by the `namespace/name` of the VMI they move. */
export const VMI_NAME_INDEX = 'vmiName';

/** One controller's queue and the expectations it counts. */
export interface OwnerLoop {
  queue: WorkQueue<string>;
  expectations: Expectations;
}

/** The informers and owner loops {@link watchChildren} connects. */
export interface ChildWatch {
  vmInformer: Informer<KubeObject>;
  vmiInformer: Informer<KubeObject>;
  /** Launcher pods, indexed by {@link CREATED_BY_INDEX}. */
  podInformer: Informer<KubeObject>;
  /** Volume hotplug's attachment pods (vmi/hotplug-attachments.ts). */
  attachmentInformer: Informer<KubeObject>;
  /** Migrations, indexed by {@link UID_INDEX} and {@link VMI_NAME_INDEX}. */
  migrationInformer: Informer<KubeObject>;
  vm: OwnerLoop;
  vmi: OwnerLoop;
  replicaSet: OwnerLoop;
  migration: OwnerLoop;
  /** Present when pools are served. */
  pool?: OwnerLoop;
}

/** Adds the event handlers; call once, before the informers start. */
export function watchChildren(w: ChildWatch): void {
  const vmiQ = w.vmi.queue;
  if (w.pool) {
    const pool = w.pool;
    const toPool = (vm: KubeObject, observed?: 'creation' | 'deletion') => {
      const k = ownerKey(vm, 'VirtualMachinePool');
      if (!k) return;
      if (observed === 'creation') pool.expectations.creationObserved(k);
      if (observed === 'deletion') pool.expectations.deletionObserved(k);
      pool.queue.add(k);
    };
    w.vmInformer.addEventHandler({
      onAdd: (o) => toPool(o, 'creation'),
      onUpdate: (_a, b) => toPool(b),
      onDelete: (o) => toPool(o, 'deletion'),
    });
    // A pool VM's VMI changing (started from another revision, ready or not) wakes its pool.
    const vmiToPool = (vmi: KubeObject) => {
      const vmKey = ownerKey(vmi, 'VirtualMachine');
      const vm = vmKey ? w.vmInformer.indexer.get(vmKey) : undefined;
      if (vm) toPool(vm);
    };
    w.vmiInformer.addEventHandler({
      onAdd: vmiToPool,
      onUpdate: (_a, b) => vmiToPool(b),
      onDelete: vmiToPool,
    });
  }
  // VMI owners: their controller reconciles on every VMI change and counts its creates/deletes.
  const owners: Array<{ kind: string } & OwnerLoop> = [
    { kind: 'VirtualMachine', ...w.vm },
    { kind: 'VirtualMachineInstanceReplicaSet', ...w.replicaSet },
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
  const migQ = w.migration.queue;
  const toMigrations = (vmi: KubeObject) => {
    for (const m of w.migrationInformer.indexer.byIndex(VMI_NAME_INDEX, objectKey(vmi)))
      migQ.add(objectKey(m));
  };
  // A migration ending frees a slot under the migration limits: the waiting ones look
  // again now (upstream's reEnqueueHighestPriorityPendingMigrations).
  const requeueWaiting = () => {
    for (const m of w.migrationInformer.indexer.list() as VirtualMachineInstanceMigration[])
      if ((m.status?.phase ?? 'Pending') === 'Pending') migQ.add(objectKey(m as KubeObject));
  };
  const finalPhase = (m: KubeObject) =>
    isMigrationFinal((m as VirtualMachineInstanceMigration).status?.phase);
  w.migrationInformer.addEventHandler({
    onUpdate: (a, b) => {
      if (!finalPhase(a) && finalPhase(b)) requeueWaiting();
    },
    onDelete: requeueWaiting,
  });
  w.vmiInformer.addEventHandler({
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
      for (const m of w.migrationInformer.indexer.byIndex(UID_INDEX, jobUid)) {
        const k = objectKey(m);
        if (observed === 'creation') w.migration.expectations.creationObserved(k);
        migQ.add(k);
      }
    } else if (vmiKey) {
      if (observed === 'creation') w.vmi.expectations.creationObserved(vmiKey);
      if (observed === 'deletion') w.vmi.expectations.deletionObserved(vmiKey);
    }
    if (vmiKey) vmiQ.add(vmiKey);
  };
  const attachmentEvent = (p: KubeObject) => {
    const vmi = p.metadata?.annotations?.[HOTPLUG_VMI_ANNOTATION];
    if (vmi) vmiQ.add(`${p.metadata?.namespace}/${vmi}`);
  };
  w.attachmentInformer.addEventHandler({
    onAdd: attachmentEvent,
    onUpdate: (_a, p) => attachmentEvent(p),
    onDelete: attachmentEvent,
  });
  w.podInformer.addEventHandler({
    onAdd: (p) => podEvent(p, 'creation'),
    onUpdate: (_a, p) => podEvent(p),
    onDelete: (p) => podEvent(p, 'deletion'),
  });
}
