/** Wires DataVolume events to the VM controller's queue: the owner VM and the VMs naming it. */
import type { VirtualMachine } from '../../api/generated/types';
import { ownerKey } from '../common/controller-wiring';
import type { Informer } from '../runtime/informer';
import { objectKey } from '../runtime/resources';
import type { KubeObject } from '../runtime/types';
import type { WorkQueue } from '../runtime/workqueue';

export function watchDataVolumes(
  dvs: Informer<KubeObject>,
  vms: Informer<KubeObject>,
  vmQ: WorkQueue<string>,
): void {
  const onDv = (dv: KubeObject) => {
    const owner = ownerKey(dv, 'VirtualMachine');
    if (owner) vmQ.add(owner);
    for (const v of vms.indexer.byIndex('namespace', dv.metadata?.namespace ?? '')) {
      const vols = (v as VirtualMachine).spec?.template?.spec?.volumes ?? [];
      if (vols.some((x) => x.dataVolume?.name === dv.metadata?.name)) vmQ.add(objectKey(v));
    }
  };
  dvs.addEventHandler({ onAdd: onDv, onUpdate: (_a, b) => onDv(b), onDelete: onDv });
}
