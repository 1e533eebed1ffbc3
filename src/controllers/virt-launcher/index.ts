/** virt-launcher: one process per VMI, serving the launcher protocol over its pod's sockets. */
export * from './console-relay';
export * from './domain-report';
export * from './drivers';
export * from './guest-agent-poller';
export * from './guest-agent-report';
export * from './image-dirs';
export * from './launcher';
export * from './launcher-paths';
export * from './main';
export * from './path-map';
export * from './short-dir';
export * from './socket-proxy';
export * from './volume-prep';
