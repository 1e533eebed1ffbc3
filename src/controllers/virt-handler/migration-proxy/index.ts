export * from './kubelet-wiring';
export * from './manager';
export * from './ports';
export * from './proxy';
export * from './relay';
export * from './tls';
export * from './wiring';
