/** Admission-time validation of kubevirt.io objects, as pure functions returning field errors. */
export * from './admission';
export * from './affinity';
export * from './instancetype';
export * from './label-selector';
export * from './migration';
export * from './names';
export * from './pool';
export * from './port-name';
export * from './replicaset';
export * from './vm';
export * from './vmi';
export * from './vmi-arch';
export * from './vmi-compute';
export * from './vmi-devices';
export * from './vmi-network';
export * from './vmi-spec';
export * from './vmi-storage';
