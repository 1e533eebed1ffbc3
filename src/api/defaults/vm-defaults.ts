/**
 * VirtualMachine defaulting, as upstream's VM mutating webhook (SetVirtualMachineDefaults):
 * the instance type and preference kinds, the template's architecture and machine type
 * (from the preference if it has one), its default pod network and interface (so a
 * preference's interface model reaches that interface when the VM is expanded), its
 * firmware serial, and the deprecated `running` flag turned into `runStrategy`.
 */
import type { ClusterConfig } from '../config/cluster-config';
import type { VirtualMachine, VirtualMachinePreferenceSpec } from '../generated/types';
import { type InstancetypeCatalog, InstancetypeKinds } from '../instancetype/catalog';
import { cloneJson } from '../json-clone';
import { firmwareSerialForVM } from './firmware-uuid';
import { setDefaultNetworkInterface } from './vmi-defaults';

/** Options for {@link defaultVirtualMachine}. */
export interface VirtualMachineDefaultingOptions {
  /** Where to find the VM's preference, for its preferred architecture and machine type. */
  instancetypes?: InstancetypeCatalog;
}

/**
 * Defaults a VirtualMachine and returns the new object. Throws DefaultingError when the
 * configured default interface is not permitted.
 */
export function defaultVirtualMachine(
  vm: VirtualMachine,
  config: ClusterConfig,
  options: VirtualMachineDefaultingOptions = {},
): VirtualMachine {
  const out: VirtualMachine = cloneJson(vm);
  out.spec ??= {} as VirtualMachine['spec'];
  const spec = out.spec;
  if (spec.instancetype && !spec.instancetype.kind && !spec.instancetype.inferFromVolume) {
    spec.instancetype.kind = InstancetypeKinds.clusterInstancetype;
  }
  if (spec.preference && !spec.preference.kind && !spec.preference.inferFromVolume) {
    spec.preference.kind = InstancetypeKinds.clusterPreference;
  }
  // `running` is deprecated: carry its meaning over to runStrategy unless both are set,
  // which validation rejects.
  if (spec.running !== undefined && spec.runStrategy === undefined) {
    spec.runStrategy = spec.running ? 'Always' : 'Halted';
    delete spec.running;
  }
  const template = spec.template;
  if (!template?.spec) return out;
  let preference: VirtualMachinePreferenceSpec | undefined;
  if (spec.preference && options.instancetypes) {
    preference = options.instancetypes.findPreference(spec.preference, out.metadata?.namespace ?? 'default');
  }
  const t = template.spec;
  t.architecture ||= preference?.preferredArchitecture || config.defaultArchitecture;
  t.domain ??= { devices: {} };
  if (!t.domain.machine?.type) {
    t.domain.machine = {
      ...(t.domain.machine ?? {}),
      type: preference?.machine?.preferredMachineType || config.machineType(t.architecture),
    };
  }
  t.domain.devices ??= {};
  setDefaultNetworkInterface(t, config);
  t.domain.firmware ??= {};
  t.domain.firmware.serial ||= firmwareSerialForVM(
    out.metadata?.namespace || 'default',
    out.metadata?.name ?? '',
  );
  return out;
}
