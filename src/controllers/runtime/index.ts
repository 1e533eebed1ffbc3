/** Reconcile primitives: the object client port and its backends, informers, work queue, manager. */
export * from './backoff';
export { type EmbeddedServer, serveEmbeddedStore } from './embedded/server';
export { EmbeddedStore, type EmbeddedStoreOptions } from './embedded/store';
export * from './errors';
export { collectionPath, KubeClient, type KubeClientOptions } from './kube/client';
export * from './patch';
export * from './resources';
export * from './selectors';
export * from './token-bucket';
export * from './types';
