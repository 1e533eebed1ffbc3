/** Wires PersistentVolumeClaim events to the VMIs and VMs that use the claim. */
import type { VirtualMachine, VirtualMachineInstance } from '../../api/generated/types';
import type { Informer } from '../runtime/informer';
import { objectKey } from '../runtime/resources';
import type { KubeObject } from '../runtime/types';
import type { WorkQueue } from '../runtime/workqueue';
import { claimNames } from './services/volumes';

/** A claim appearing or binding: the VMIs and VMs naming it look again. */
export function watchClaims(
  claims: Informer<KubeObject>,
  vmis: Informer<KubeObject>,
  vms: Informer<KubeObject>,
  vmiQ: WorkQueue<string>,
  vmQ: WorkQueue<string>,
): void {
  const onClaim = (c: KubeObject) => {
    const ns = c.metadata?.namespace;
    const name = c.metadata?.name ?? '';
    for (const v of vmis.indexer.byIndex('namespace', ns ?? '')) {
      if (claimNames((v as VirtualMachineInstance).spec).includes(name)) vmiQ.add(objectKey(v));
    }
    for (const v of vms.indexer.byIndex('namespace', ns ?? '')) {
      if (claimNames((v as VirtualMachine).spec?.template?.spec).includes(name)) vmQ.add(objectKey(v));
    }
  };
  claims.addEventHandler({ onAdd: onClaim, onUpdate: (_a, b) => onClaim(b), onDelete: onClaim });
}
