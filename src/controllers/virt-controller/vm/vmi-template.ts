/**
 * The VMI a VirtualMachine starts (upstream's setupVMIFromVM): its template with instance
 * type and preference expanded, named after the VM, owned by it (controller reference and
 * the VM controller's finalizer), stamped with the VM generation, defaulted and validated
 * against the cluster configuration.
 */
import type { ClusterConfig } from '../../../api/config/cluster-config';
import { defaultVirtualMachineInstance } from '../../../api/defaults/vmi-defaults';
import { FieldPath } from '../../../api/errors';
import type { VirtualMachine, VirtualMachineInstance } from '../../../api/generated/types';
import type { InstancetypeCatalog } from '../../../api/instancetype/catalog';
import { expandVirtualMachine } from '../../../api/instancetype/expand';
import { Finalizers } from '../../../api/labels';
import { validateVirtualMachineInstanceSpec } from '../../../api/validation/vmi-spec';
import { controllerRef } from '../../common/owner-ref';

/** The VMI annotation recording the VM generation it was created from (upstream). */
export const VM_GENERATION_ANNOTATION = 'kubevirt.io/vm-generation';

/** The VMI `vm` would start now (`paused`: startStrategy Paused), or the errors that stop it. */
export function vmiFromTemplate(
  vm: VirtualMachine,
  paused: boolean,
  config: ClusterConfig,
  catalog: InstancetypeCatalog | undefined,
): { vmi?: VirtualMachineInstance; errors: string[] } {
  let expanded = vm;
  if (vm.spec.instancetype || vm.spec.preference) {
    if (!catalog) return { errors: ['spec.instancetype: no instance type catalog is configured'] };
    const r = expandVirtualMachine(vm, catalog);
    if (r.errors.length) return { errors: r.errors.map((e) => `${e.path}: ${e.message}`) };
    expanded = r.vm;
  }
  const template = expanded.spec.template;
  const name = vm.metadata?.name ?? '';
  const raw: VirtualMachineInstance = {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: {
      ...(structuredClone(template.metadata ?? {}) as VirtualMachineInstance['metadata']),
      name,
      namespace: vm.metadata?.namespace,
      labels: { ...(template.metadata?.labels ?? {}) },
      annotations: {
        ...(template.metadata?.annotations ?? {}),
        [VM_GENERATION_ANNOTATION]: String(vm.metadata?.generation ?? 1),
      },
      ownerReferences: [controllerRef('kubevirt.io/v1', 'VirtualMachine', vm)],
      finalizers: [Finalizers.virtualMachineController],
    },
    spec: structuredClone(template.spec ?? { domain: { devices: {} } }) as VirtualMachineInstance['spec'],
  };
  delete raw.metadata?.generateName;
  delete (raw.metadata as Record<string, unknown>).creationTimestamp;
  if (paused) raw.spec.startStrategy = 'Paused';
  const vmi = defaultVirtualMachineInstance(raw, config);
  const errors = validateVirtualMachineInstanceSpec(
    FieldPath.of('spec', 'template', 'spec'),
    vmi.spec,
    config,
  );
  if (errors.length) return { errors: errors.map((e) => `${e.path}: ${e.message}`) };
  return { vmi, errors: [] };
}
