/**
 * What virt-api's expand-spec answers (upstream's pkg/instancetype/expand Expand): a VM
 * without instance type or preference comes back unchanged; otherwise the template gets a
 * disk for each volume without one and the default pod network and interface (so the
 * preference's disk bus and interface model apply to them), then the instance type and
 * preference, then the spec defaults (machine type, memory, CPU topology, pull policies,
 * eviction strategy), and the matchers and their status refs are dropped.
 */
import type { ClusterConfig } from '../config/cluster-config';
import {
  DefaultingError,
  defaultVirtualMachineInstanceSpec,
  setDefaultNetworkInterface,
  setDefaultVolumeDisks,
} from '../defaults/vmi-defaults';
import type { VirtualMachine } from '../generated/types';
import type { InstancetypeCatalog } from './catalog';
import { type ExpansionResult, expandVirtualMachine } from './expand';

/** Expands `vm` as upstream's expand-spec subresource does; see the file comment. */
export function expandVirtualMachineSpec(
  vm: VirtualMachine,
  catalog: InstancetypeCatalog,
  config: ClusterConfig,
): ExpansionResult {
  if (!vm.spec?.instancetype && !vm.spec?.preference) return { vm, errors: [] };
  const prepared: VirtualMachine = structuredClone(vm);
  prepared.spec.template ??= {};
  const template = prepared.spec.template;
  template.spec ??= { domain: { devices: {} } };
  template.spec.domain ??= { devices: {} };
  template.spec.domain.devices ??= {};
  try {
    setDefaultVolumeDisks(template.spec);
    setDefaultNetworkInterface(template.spec, config);
  } catch (e) {
    if (e instanceof DefaultingError) return { vm, errors: e.errors };
    throw e;
  }
  const r = expandVirtualMachine(prepared, catalog);
  if (r.errors.length > 0) return { ...r, vm };
  const out = r.vm;
  const spec = out.spec.template?.spec;
  if (out.spec.template && spec) {
    try {
      out.spec.template.spec = defaultVirtualMachineInstanceSpec(spec, config);
    } catch (e) {
      if (e instanceof DefaultingError) return { vm, errors: e.errors };
      throw e;
    }
  }
  if (out.status) {
    delete out.status.instancetypeRef;
    delete out.status.preferenceRef;
  }
  return { ...r, vm: out };
}
