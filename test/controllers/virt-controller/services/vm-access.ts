/**
 * Reads and retried read-modify-writes of one VM and its VMI on the embedded harness, for
 * the live-change tests (hotplug, placement): an edit retries until no one else wrote in
 * between, as the controllers write the same objects.
 */
import type {
  VirtualMachine,
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from '../../../../src/api/generated/types';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import {
  VirtualMachineInstanceMigrationType,
  VirtualMachineType,
} from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { type Harness, waitFor } from './embedded-harness';

/** The accessors of VM `name` in `default` on the harness `h()` (read when called). */
export function vmAccess(h: () => Harness, name: string, namespace = 'default') {
  const getVm = () => h().store.get<VirtualMachine & KubeObject>(VirtualMachineType, name, namespace);
  const getVmi = () => h().store.get<VirtualMachineInstance & KubeObject>(VmiResource, name, namespace);
  return {
    getVm,
    getVmi,
    editVmi: (what: string, f: (v: VirtualMachineInstance) => void) =>
      waitFor(what, async () => {
        const v = await getVmi();
        f(v);
        await h().store.update(VmiResource, v as KubeObject);
        return true;
      }),
    editVm: (what: string, f: (v: VirtualMachine) => void) =>
      waitFor(what, async () => {
        const vm = await getVm();
        f(vm);
        await h().store.update(VirtualMachineType, vm as KubeObject);
        return true;
      }),
    /** The migrations in the namespace. */
    migrations: async () =>
      (
        await h().store.list<VirtualMachineInstanceMigration & KubeObject>(
          VirtualMachineInstanceMigrationType,
          {
            namespace,
          },
        )
      ).items,
  };
}
