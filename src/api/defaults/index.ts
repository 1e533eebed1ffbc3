/** Admission-time defaulting of kubevirt.io objects, as pure functions. */
export * from './arch-defaults';
export * from './firmware-uuid';
export * from './hyperv';
export * from './memory-hotplug';
export * from './migration-defaults';
export * from './object-defaults';
export * from './vm-defaults';
export * from './vmi-defaults';
