/**
 * Reads of one VM's KubeVirt objects for the cluster cases that change a running VM
 * (hotplug, migration): the VM and its VMI (undefined when absent), and the
 * workload-update migrations the controller made for it.
 */
import type { CustomObjectsApi } from '@kubernetes/client-node';
import type {
  VirtualMachine,
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from '../../src/api/generated/types';

/** The readers of VM `vm` in namespace `ns`. */
export function kubevirtReads(custom: CustomObjectsApi, ns: string, vm: string) {
  const get = async <T>(plural: string, name: string) =>
    (await custom
      .getNamespacedCustomObject({ group: 'kubevirt.io', version: 'v1', namespace: ns, plural, name })
      .catch(() => undefined)) as T | undefined;
  return {
    get,
    vmi: () => get<VirtualMachineInstance>('virtualmachineinstances', vm),
    vm: () => get<VirtualMachine>('virtualmachines', vm),
    /** The migrations annotated `kubevirt.io/workloadUpdateMigration` for this VM's VMI. */
    workloadUpdates: async () =>
      (
        (await custom.listNamespacedCustomObject({
          group: 'kubevirt.io',
          version: 'v1',
          namespace: ns,
          plural: 'virtualmachineinstancemigrations',
        })) as { items: VirtualMachineInstanceMigration[] }
      ).items.filter(
        (m) =>
          m.spec?.vmiName === vm &&
          m.metadata?.annotations?.['kubevirt.io/workloadUpdateMigration'] !== undefined,
      ),
  };
}
