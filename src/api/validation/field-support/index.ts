/** Which spec fields take effect and which validation refuses, with the reasons. */
import { dataVolumeFieldSupport, vmFieldSupport } from './vm-fields';
import { vmiDomainFieldSupport } from './vmi-domain-fields';
import { vmiSpecFieldSupport } from './vmi-spec-fields';

export { migrationConfigurationFieldSupport, migrationPolicyFieldSupport } from './migration-fields';
export * from './registry-types';
export { dataVolumeFieldSupport, vmFieldSupport };

/** A VirtualMachineInstanceSpec's fields (also every template's spec). */
export const vmiFieldSupport = { ...vmiSpecFieldSupport, ...vmiDomainFieldSupport };
