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
import { waitFor } from '../support/wait';

/** The readers of VM `vm` in namespace `ns`. */
export function kubevirtReads(custom: CustomObjectsApi, ns: string, vm: string) {
  const get = async <T>(plural: string, name: string) =>
    (await custom
      .getNamespacedCustomObject({ group: 'kubevirt.io', version: 'v1', namespace: ns, plural, name })
      .catch(() => undefined)) as T | undefined;
  const workloadUpdates = async () =>
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
    );
  return {
    get,
    vmi: () => get<VirtualMachineInstance>('virtualmachineinstances', vm),
    vm: () => get<VirtualMachine>('virtualmachines', vm),
    /** The migrations annotated `kubevirt.io/workloadUpdateMigration` for this VM's VMI. */
    workloadUpdates,
    /**
     * The `count` workload-update migrations once each Succeeded and holds its final state:
     * the controller copies the VMI's finished migration state onto a Succeeded migration in
     * its next pass (upstream's too), so the phase alone comes a moment before targetNode.
     */
    finishedUpdates: (count: number) =>
      waitFor(
        `${count} workload-update migration(s) Succeeded with their final state`,
        async () => {
          const ms = await workloadUpdates();
          const done = ms.every((m) => m.status?.phase === 'Succeeded' && m.status.migrationState?.completed);
          return ms.length === count && done ? ms : undefined;
        },
        60_000,
        250,
      ),
  };
}
