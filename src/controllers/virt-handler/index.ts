/** virt-handler: the node agent. */
export * from './guest-agent-status';
export * from './handler';
export * from './launcher-connections';
export * from './migration-sync';
export * from './migration-target-domain';
export * from './node-labels';
export * from './node-registrar';
export * from './vmi-status';
