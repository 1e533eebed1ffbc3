/**
 * Registers the VirtualMachineClone controller beside the snapshot and restore controllers
 * it drives: its temporary snapshot and restore (owned by the clone) wake it, as do the
 * source and target VMs, a source snapshot, and claims of its namespace (the cleanup waits
 * for the target's claims to bind).
 */
import type {
  VirtualMachine,
  VirtualMachineClone,
  VirtualMachineRestore,
  VirtualMachineSnapshot,
  VirtualMachineSnapshotContent,
} from '../../../api/generated/types';
import type { EventRecorder, KeyReconciler } from '../../common/controller-ports';
import { lister, ownerKey } from '../../common/controller-wiring';
import type { Controller } from '../../runtime/controller';
import type { Informer, SharedInformerFactory } from '../../runtime/informer';
import { objectKey } from '../../runtime/resources';
import type { KubeObject, ObjectClient, ResourceType } from '../../runtime/types';
import { type Pvc, VirtualMachineCloneType } from '../snapshot/resources';
import { targetName, VmCloneController } from './clone-controller';

export interface CloneWiring {
  client: ObjectClient;
  recorder: EventRecorder;
  informers: SharedInformerFactory;
  register: (name: string, forType: ResourceType, r: KeyReconciler) => Controller;
  vmInformer: Informer<KubeObject>;
  claimInformer: Informer<KubeObject>;
  snapshotInformer: Informer<KubeObject>;
  contentInformer: Informer<KubeObject>;
  restoreInformer: Informer<KubeObject>;
}

/** Starts nothing: registers the clone controller (the Manager starts it). */
export function registerCloneController(w: CloneWiring): void {
  const cloneInf = w.informers.informerFor(VirtualMachineCloneType);
  const loop = w.register(
    'vmclone',
    VirtualMachineCloneType,
    new VmCloneController({
      client: w.client,
      recorder: w.recorder,
      clones: lister<VirtualMachineClone>(cloneInf),
      snapshots: lister<VirtualMachineSnapshot>(w.snapshotInformer),
      contents: lister<VirtualMachineSnapshotContent>(w.contentInformer),
      restores: lister<VirtualMachineRestore>(w.restoreInformer),
      vms: lister<VirtualMachine>(w.vmInformer),
      claims: lister<Pvc>(w.claimInformer),
    }),
  );
  const on = (inf: Informer<KubeObject>, f: (o: KubeObject) => void) =>
    inf.addEventHandler({ onAdd: f, onUpdate: (_a, b) => f(b), onDelete: f });
  const clonesIn = (o: KubeObject) =>
    cloneInf.indexer.byIndex('namespace', o.metadata?.namespace ?? '') as VirtualMachineClone[];
  const owned = (o: KubeObject) => {
    const k = ownerKey(o, 'VirtualMachineClone');
    if (k) loop.queue.add(k);
  };
  on(w.restoreInformer, owned);
  on(w.snapshotInformer, (s) => {
    owned(s);
    for (const c of clonesIn(s))
      if (c.spec?.source?.kind === 'VirtualMachineSnapshot' && c.spec.source.name === s.metadata?.name)
        loop.queue.add(objectKey(c as KubeObject));
  });
  on(w.vmInformer, (vm) => {
    for (const c of clonesIn(vm))
      if (c.spec?.source?.name === vm.metadata?.name || targetName(c) === vm.metadata?.name)
        loop.queue.add(objectKey(c as KubeObject));
  });
  on(w.claimInformer, (pvc) => {
    for (const c of clonesIn(pvc)) if (c.status?.restoreName) loop.queue.add(objectKey(c as KubeObject));
  });
}
