/** The local pod runtime: runs launcher Pods as processes on nodes without a kubelet. */

export * from './atomic-writer';
export * from './cni';
export * from './node-status';
export * from './pod-dirs';
export * from './pod-network';
export * from './pod-runtime';
export * from './pod-volumes';
export * from './processes';
