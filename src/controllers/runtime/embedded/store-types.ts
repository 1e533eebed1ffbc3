/** The embedded store's public types: a stored object and the store's options. */
import type { ObjectMeta, ResourceType } from '../types';

/** A stored object: metadata always has name, uid and resourceVersion. */
export type StoredObj = Record<string, unknown> & {
  metadata: ObjectMeta & { name: string; uid: string; resourceVersion: string };
};

/** Options of `EmbeddedStore`: persistence, extra kinds, watch history and bookmarks, initial namespaces. */
export interface EmbeddedStoreOptions {
  /** Directory to persist to; omitted keeps everything in memory. */
  dir?: string;
  /** Kinds known besides the built-ins and KubeVirt's (more arrive with CRD objects). */
  types?: ResourceType[];
  /** Watch events kept for resuming watches; older resourceVersions get 410 Gone (default 10000). */
  watchHistory?: number;
  /** Interval of BOOKMARK events to watches that asked for them (default 5000 ms). */
  bookmarkIntervalMs?: number;
  /** Journal lines between snapshots (default 10000). */
  snapshotEvery?: number;
  /** fsync each batch (default true). */
  fsync?: boolean;
  /** Namespaces created when missing (default: default, kube-system, kube-public, kube-node-lease). */
  namespaces?: string[];
}
