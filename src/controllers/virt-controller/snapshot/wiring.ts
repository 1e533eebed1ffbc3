/**
 * Registers the snapshot, content, restore and clone controllers on virt-controller's Manager and
 * wires their informers: a VM or its VMI changing wakes the snapshots of it and the
 * restores targeting it; a VolumeSnapshot wakes its content; a content its snapshot; a
 * claim the restores of its namespace.
 */
import type {
  VirtualMachine,
  VirtualMachineInstance,
  VirtualMachineRestore,
  VirtualMachineSnapshot,
  VirtualMachineSnapshotContent,
} from '../../../api/generated/types';
import type { EventRecorder, KeyReconciler } from '../../common/controller-ports';
import { lister, ownerKey } from '../../common/controller-wiring';
import type { Pod } from '../../common/pod';
import type { Controller } from '../../runtime/controller';
import type { Informer, SharedInformerFactory } from '../../runtime/informer';
import { objectKey } from '../../runtime/resources';
import type { KubeObject, ObjectClient, ResourceType } from '../../runtime/types';
import { registerCloneController } from '../clone/wiring';
import { VmRestoreController } from '../restore/restore-controller';
import { VmSnapshotContentController } from './content-controller';
import {
  type Pvc,
  type StorageClass,
  StorageClassType,
  snapshotTypes,
  VirtualMachineRestoreType,
  VirtualMachineSnapshotContentType,
  VirtualMachineSnapshotType,
  type VolumeSnapshot,
  type VolumeSnapshotClass,
  VolumeSnapshotClassType,
  VolumeSnapshotType,
} from './resources';
import { VmSnapshotController } from './snapshot-controller';
import type { VmiFreezer } from './source';

const SOURCE_INDEX = 'snapshotSource';
const TARGET_INDEX = 'restoreTarget';

export interface SnapshotWiring {
  client: ObjectClient;
  recorder: EventRecorder;
  informers: SharedInformerFactory;
  register: (name: string, forType: ResourceType, r: KeyReconciler) => Controller;
  vmInformer: Informer<KubeObject>;
  vmiInformer: Informer<KubeObject>;
  podInformer: Informer<KubeObject>;
  claimInformer: Informer<KubeObject>;
  freezer?: VmiFreezer;
}

/** Starts nothing: registers the four controllers (the Manager starts them). */
export function registerSnapshotControllers(w: SnapshotWiring): void {
  const snapInf = w.informers.informerFor(VirtualMachineSnapshotType);
  const contentInf = w.informers.informerFor(VirtualMachineSnapshotContentType);
  const restoreInf = w.informers.informerFor(VirtualMachineRestoreType);
  const vsInf = w.informers.informerFor(VolumeSnapshotType);
  const vscInf = w.informers.informerFor(VolumeSnapshotClassType);
  const scInf = w.informers.informerFor(StorageClassType);
  snapInf.indexer.addIndex(SOURCE_INDEX, (s) => {
    const n = (s as VirtualMachineSnapshot).spec?.source?.name;
    return n ? [`${s.metadata?.namespace}/${n}`] : [];
  });
  restoreInf.indexer.addIndex(TARGET_INDEX, (r) => {
    const n = (r as VirtualMachineRestore).spec?.target?.name;
    return n ? [`${r.metadata?.namespace}/${n}`] : [];
  });
  const common = {
    client: w.client,
    recorder: w.recorder,
    snapshots: lister<VirtualMachineSnapshot>(snapInf),
    contents: lister<VirtualMachineSnapshotContent>(contentInf),
    vms: lister<VirtualMachine>(w.vmInformer),
    vmis: lister<VirtualMachineInstance>(w.vmiInformer),
    claims: lister<Pvc>(w.claimInformer),
    volumeSnapshots: lister<VolumeSnapshot>(vsInf),
    storageClasses: lister<StorageClass>(scInf),
    snapshotClasses: lister<VolumeSnapshotClass>(vscInf),
    podsUsingClaims: (ns: string, claims: string[]) =>
      (w.podInformer.indexer.byIndex('namespace', ns) as Pod[]).filter(
        (p) =>
          p.status?.phase !== 'Succeeded' &&
          p.status?.phase !== 'Failed' &&
          (p.spec?.volumes ?? []).some((v) => claims.includes(v.persistentVolumeClaim?.claimName ?? '')),
      ).length,
  };
  const snapLoop = w.register('vmsnapshot', VirtualMachineSnapshotType, new VmSnapshotController(common));
  const contentLoop = w.register(
    'vmsnapshotcontent',
    VirtualMachineSnapshotContentType,
    new VmSnapshotContentController({ ...common, freezer: w.freezer }),
  );
  const restoreLoop = w.register(
    'vmrestore',
    VirtualMachineRestoreType,
    new VmRestoreController({ ...common, restores: lister<VirtualMachineRestore>(restoreInf) }),
  );
  const on = (inf: Informer<KubeObject>, f: (o: KubeObject) => void) =>
    inf.addEventHandler({ onAdd: f, onUpdate: (_a, b) => f(b), onDelete: f });
  const toSnapshotsOf = (key: string) => {
    for (const s of snapInf.indexer.byIndex(SOURCE_INDEX, key)) {
      snapLoop.queue.add(objectKey(s));
      const c = (s as VirtualMachineSnapshot).status?.virtualMachineSnapshotContentName;
      if (c) contentLoop.queue.add(`${s.metadata?.namespace}/${c}`);
    }
    for (const r of restoreInf.indexer.byIndex(TARGET_INDEX, key)) restoreLoop.queue.add(objectKey(r));
  };
  on(w.vmInformer, (o) => toSnapshotsOf(objectKey(o)));
  on(w.vmiInformer, (o) => toSnapshotsOf(objectKey(o)));
  on(snapInf, (s) => {
    const c =
      (s as VirtualMachineSnapshot).status?.virtualMachineSnapshotContentName ??
      `vmsnapshot-content-${s.metadata?.uid}`;
    contentLoop.queue.add(`${s.metadata?.namespace}/${c}`);
    for (const r of restoreInf.indexer.byIndex('namespace', s.metadata?.namespace ?? ''))
      if ((r as VirtualMachineRestore).spec?.virtualMachineSnapshotName === s.metadata?.name)
        restoreLoop.queue.add(objectKey(r));
  });
  on(contentInf, (c) => {
    const s = (c as VirtualMachineSnapshotContent).spec?.virtualMachineSnapshotName;
    if (s) snapLoop.queue.add(`${c.metadata?.namespace}/${s}`);
  });
  on(vsInf, (v) => {
    const k = ownerKey(v, 'VirtualMachineSnapshotContent');
    if (k) contentLoop.queue.add(k);
  });
  on(w.claimInformer, (c) => {
    for (const r of restoreInf.indexer.byIndex('namespace', c.metadata?.namespace ?? ''))
      restoreLoop.queue.add(objectKey(r));
  });
  registerCloneController({
    ...w,
    snapshotInformer: snapInf,
    contentInformer: contentInf,
    restoreInformer: restoreInf,
  });
  // A class appearing changes which volumes can be snapshotted: look at unfinished snapshots.
  const all = () => {
    for (const s of snapInf.indexer.list()) snapLoop.queue.add(objectKey(s));
  };
  on(vscInf, all);
  on(scInf, all);
}

/**
 * The first kind the snapshot controllers need that `client` does not serve (its CRD not
 * installed), or undefined when all are: the Manager waits for every informer's cache, so
 * controllers over an unserved kind would hold up all the others.
 */
export async function unservedSnapshotKind(client: ObjectClient): Promise<string | undefined> {
  for (const t of snapshotTypes) {
    try {
      await client.list(t, { limit: 1 });
    } catch (e) {
      return `${t.plural}.${t.group} (${(e as Error).message.slice(0, 200)})`;
    }
  }
  return undefined;
}
