/**
 * The embedded object store of local mode: the Kubernetes API semantics the controllers
 * rely on, in one process, persisted through `Journal`.
 *
 * - one global resourceVersion counter; every write bumps it;
 * - `metadata.generation` starts at 1 and is bumped when anything but metadata (and status,
 *   for kinds with a status subresource) changes, and when deletion starts;
 * - status subresource: `update` keeps the stored status, `updateStatus` changes only status;
 * - optimistic concurrency: a write carrying `metadata.resourceVersion` must match;
 * - finalizers and deletionTimestamp; owner-reference garbage collection (background,
 *   foreground, orphan) and namespace deletion, run by `GarbageCollector`;
 * - watch: replay from a resourceVersion still in the history window, 410 Gone for older
 *   ones, bookmarks, selector transitions (an object leaving a selector is DELETED).
 *
 * Writes change memory and notify watchers at once (JavaScript runs one write at a time,
 * so checks and changes are atomic); the returned promise resolves once the batch is on
 * disk (group commit: one fsync per event-loop turn).
 */
import { randomUUID } from 'node:crypto';
import { ApiError, alreadyExists, invalid, notFound } from '../errors';
import { jsonEqual } from '../patch';
import { builtinTypes, CustomResourceDefinitionType, kubevirtTypes } from '../resources';
import type {
  DeleteOptions,
  DeleteResult,
  KubeList,
  KubeObject,
  ListOptions,
  ObjectClient,
  PatchOptions,
  ResourceType,
  WatchEvent,
  WatchHandle,
  WatchOptions,
  WriteOptions,
} from '../types';
import { ChangeLog } from './change-log';
import { acceptCrd, restoredCrdTypes } from './crd-acceptance';
import { GarbageCollector } from './garbage-collector';
import { Journal, type StoredObject } from './journal';
import { listPage } from './list-page';
import { ObjectIndex } from './object-index';
import { copyOut, SERVING, type Served, storageKind } from './store-rules';
import type { EmbeddedStoreOptions, StoredObj } from './store-types';
import { TypeRegistry } from './type-registry';
import { TypedLookups } from './typed-lookups';
import { validateMetadata } from './validation';
import { WatchHub } from './watch-hub';
import {
  applyBody,
  checkBody,
  checkDeletePreconditions,
  checkNamespaceOpen,
  checkUpdatePreconditions,
  deletionFinalizers,
  markDeleting,
  namespaceOf,
  patched,
  requiredName,
  stampCreated,
  updatedObject,
} from './write-rules';

export { MAX_OBJECT_BYTES } from './store-rules';

/** Options of a write, possibly from the REST server (store-rules' SERVING). */
type Write = WriteOptions & Served;
type List = ListOptions & Served;

export type { EmbeddedStoreOptions, StoredObj } from './store-types';

/** The embedded store; it implements `ObjectClient`, so controllers use it like an API server. */
export class EmbeddedStore implements ObjectClient {
  private readonly objects = new ObjectIndex();
  private readonly registry = new TypeRegistry((kind) => this.objects.addKind(kind));
  private readonly watches: WatchHub;
  /** Applies each change to the index, the watchers and the journal (./change-log). */
  private readonly changes: ChangeLog;
  private closed = false;
  private readonly gc: GarbageCollector;
  private readonly lookups = new TypedLookups(this.objects, this.registry);

  private constructor(
    private readonly journal: Journal | undefined,
    options: EmbeddedStoreOptions,
  ) {
    this.watches = new WatchHub(
      { rv: () => this.changes.rv, listNow: (type, opts) => this.listNow(type, opts) },
      options.watchHistory ?? 10_000,
      options.bookmarkIntervalMs ?? 5000,
    );
    for (const t of [...builtinTypes, ...kubevirtTypes, ...(options.types ?? [])])
      this.registry.registerBuiltin(t);
    this.gc = new GarbageCollector(this, this.lookups);
    this.changes = new ChangeLog(this.objects, this.registry, this.watches, journal);
  }

  /** Opens (and recovers) a store; with `dir` it is persisted there. */
  static async open(options: EmbeddedStoreOptions = {}): Promise<EmbeddedStore> {
    const journal = options.dir
      ? new Journal(options.dir, { snapshotEvery: options.snapshotEvery, fsync: options.fsync })
      : undefined;
    const store = new EmbeddedStore(journal, options);
    if (journal) {
      const rec = journal.load();
      store.changes.rv = rec.rv;
      for (const o of rec.objects) store.restore(o);
      store.watches.resetHistory(store.changes.rv);
      // Deletions or garbage collection interrupted by the restart carry on.
      store.gc.enqueueAll();
    }
    for (const ns of options.namespaces ?? ['default', 'kube-system', 'kube-public', 'kube-node-lease']) {
      if (!store.find(storageKind(builtinTypes[0]), undefined, ns)) {
        await store.create(builtinTypes[0], { metadata: { name: ns } });
      }
    }
    return store;
  }

  /** The current (latest) resourceVersion. */
  get resourceVersion(): string {
    return String(this.changes.rv);
  }

  /** Makes a kind known (CRD objects register theirs automatically). */
  registerType(type: ResourceType): void {
    this.registry.register(type);
  }

  /** The kind served at `group/version/plural`, if known (used by the REST server). */
  resolveType(group: string, version: string, plural: string): ResourceType | undefined {
    return this.registry.resolve(group, version, plural);
  }

  /** Every known kind. */
  types(): ResourceType[] {
    return this.registry.all();
  }

  /** Drops the watch history: watches from any earlier resourceVersion now get 410 Gone. */
  compactHistory(): void {
    this.watches.resetHistory(this.changes.rv);
  }

  /** Stops watches, writes what is pending and releases the directory. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.gc.stop();
    this.watches.closeAll();
    // Everything acknowledged or queued reaches the disk before the files close.
    await this.changes.drain();
    this.journal?.close();
  }

  // ---- ObjectClient -------------------------------------------------------------------

  async get<T extends KubeObject>(type: ResourceType, name: string, ns?: string, s?: Served): Promise<T> {
    const obj = this.find(this.registry.kindOf(type), namespaceOf(type, ns), name);
    if (!obj) throw notFound(type.group, type.plural, name);
    return copyOut(type, obj, s?.[SERVING]) as T;
  }

  async list<T extends KubeObject>(type: ResourceType, options: List = {}): Promise<KubeList<T>> {
    return this.listNow<T>(type, options);
  }

  /** `list` without a yield: a watch registers in the same turn as its initial list. */
  private listNow<T extends KubeObject>(type: ResourceType, options: List): KubeList<T> {
    return listPage<T>(
      type,
      this.objects.ofKind(this.registry.kindOf(type)),
      options,
      this.changes.rv,
      options[SERVING],
    );
  }

  async watch<T extends KubeObject>(
    type: ResourceType,
    options: WatchOptions & Served,
    onEvent: (event: WatchEvent<T>) => void,
  ): Promise<WatchHandle> {
    if (this.closed) throw new ApiError(503, 'ServiceUnavailable', 'the embedded store is closed');
    return this.watches.watch(type, this.registry.kindOf(type), options, onEvent);
  }

  async create<T extends KubeObject>(type: ResourceType, object: T, options: Write = {}): Promise<T> {
    this.assertWritable();
    const kind = this.registry.kindOf(type);
    const view = options[SERVING];
    const obj = (view ? object : structuredClone(object)) as unknown as StoredObj;
    checkBody(type, obj);
    if (!obj.metadata) obj.metadata = {} as StoredObj['metadata'];
    const meta = obj.metadata;
    if (!type.namespaced) delete meta.namespace;
    const ns = namespaceOf(type, meta.namespace);
    if (type.namespaced) meta.namespace = ns;
    if (!meta.name && meta.generateName) meta.name = meta.generateName + randomUUID().slice(0, 5);
    const causes = validateMetadata(type, obj);
    if (causes.length) throw invalid(type.kind, meta.name ?? '', causes);
    if (type.namespaced) checkNamespaceOpen(ns!, this.find(storageKind(builtinTypes[0]), undefined, ns!));
    if (this.find(kind, ns, meta.name)) throw alreadyExists(type.group, type.plural, meta.name);
    stampCreated(type, obj);
    if (kind === storageKind(CustomResourceDefinitionType)) this.acceptCrd(obj);
    if (kind === storageKind(builtinTypes[0])) obj.status = { phase: 'Active' };
    if (options.dryRun)
      return copyOut(type, { ...obj, metadata: { ...meta, resourceVersion: '' } }, view) as T;
    const done = this.changes.put(kind, obj, 'ADDED');
    await done;
    return copyOut(type, obj, view) as T;
  }

  async update<T extends KubeObject>(type: ResourceType, object: T, options: Write = {}): Promise<T> {
    return this.replace(type, object, false, options);
  }

  async updateStatus<T extends KubeObject>(type: ResourceType, object: T, options: Write = {}): Promise<T> {
    return this.replace(type, object, true, options);
  }

  async patch<T extends KubeObject>(
    type: ResourceType,
    name: string,
    patch: unknown,
    options: PatchOptions & Served,
  ): Promise<T> {
    this.assertWritable();
    const ns = namespaceOf(type, options.namespace);
    const current = this.find(this.registry.kindOf(type), ns, name);
    if (options.type === 'apply') {
      const body = applyBody(type, name, patch, options);
      if (!current) {
        if (options.subresource === 'status') throw notFound(type.group, type.plural, name);
        return this.create(
          type,
          { ...body, metadata: { ...body.metadata, name, namespace: ns } } as T,
          options,
        );
      }
    }
    if (!current) throw notFound(type.group, type.plural, name);
    // A JSON patch copies what it patches; merge and apply share the parts they keep.
    const next = patched(copyOut(type, current, options.type === 'json'), patch, options.type);
    // A resourceVersion in the patch is a precondition; otherwise the patch applies to the current version.
    return this.replace(type, next, options.subresource === 'status', options, current, true);
  }

  async delete<T extends KubeObject>(
    type: ResourceType,
    name: string,
    options: DeleteOptions & Served = {},
  ): Promise<DeleteResult<T>> {
    this.assertWritable();
    const view = options[SERVING];
    const kind = this.registry.kindOf(type);
    const ns = namespaceOf(type, options.namespace);
    const current = this.find(kind, ns, name);
    if (!current) throw notFound(type.group, type.plural, name);
    checkDeletePreconditions(type, name, current, options.preconditions);
    const finalizers = deletionFinalizers(current, options.propagationPolicy);
    // As on a cluster, foreground/orphan deletion always goes through the finalizer (even with
    // no dependents): the caller sees `pending`, and the garbage collector finishes it.
    const terminatingNamespace =
      type.kind === 'Namespace' && type.group === '' && this.lookups.namespaceHasContent(name);
    if (options.dryRun) return { pending: finalizers.size > 0, object: copyOut(type, current, view) as T };
    if (finalizers.size > 0 || terminatingNamespace) {
      const next = structuredClone(current);
      const changed =
        !current.metadata.deletionTimestamp ||
        !jsonEqual([...finalizers].sort(), [...(current.metadata.finalizers ?? [])].sort());
      if (changed)
        await this.changes.put(
          kind,
          markDeleting(next, finalizers, terminatingNamespace),
          'MODIFIED',
          current,
        );
      this.gc.enqueue(next.metadata.uid);
      return { pending: true, object: copyOut(type, changed ? next : current, view) as T };
    }
    const removed = this.remove(kind, current);
    await removed.done;
    return { pending: false, object: copyOut(type, removed.obj, view) as T };
  }

  // ---- used by the garbage collector ----------------------------------------------

  /** @internal Finishes deleting a terminating namespace once it is empty. */
  async finishNamespace(obj: StoredObj): Promise<void> {
    // The namespace as stored now: another pass may have removed it already (the collector
    // read `obj` before awaiting its deletes).
    const kind = storageKind(builtinTypes[0]);
    const current = this.find(kind, undefined, obj.metadata.name);
    if (!current || current.metadata.uid !== obj.metadata.uid || current.metadata.finalizers?.length) return;
    await this.remove(kind, current).done;
  }

  // ---- private ------------------------------------------------------------------------

  private async replace<T extends KubeObject>(
    type: ResourceType,
    object: KubeObject,
    status: boolean,
    options: Write,
    expected?: StoredObj,
    owned = false,
  ): Promise<T> {
    this.assertWritable();
    const kind = this.registry.kindOf(type);
    const view = options[SERVING];
    // `owned`: the caller made `object` for this write alone (a patch's result).
    const input = (owned || view ? object : structuredClone(object)) as StoredObj;
    checkBody(type, input);
    const meta = input.metadata ?? ({} as StoredObj['metadata']);
    const ns = namespaceOf(type, meta.namespace);
    const name = requiredName(type, meta);
    const current = this.find(kind, ns, name);
    if (!current) throw notFound(type.group, type.plural, name);
    checkUpdatePreconditions(type, name, current, meta, expected);
    const next = updatedObject(type, current, input, status);
    if (!status && kind === storageKind(CustomResourceDefinitionType)) this.acceptCrd(next);
    next.apiVersion = current.apiVersion;
    next.kind = current.kind;
    next.metadata.resourceVersion = current.metadata.resourceVersion;
    if (jsonEqual(next, current)) return copyOut(type, current, view) as T; // no-op writes do not bump resourceVersion
    if (options.dryRun) return copyOut(type, next, view) as T;
    if (
      next.metadata.deletionTimestamp &&
      !next.metadata.finalizers?.length &&
      !this.namespaceWaits(type, next)
    ) {
      const removed = this.remove(kind, next, current);
      await removed.done;
      return copyOut(type, removed.obj, view) as T;
    }
    await this.changes.put(kind, next, 'MODIFIED', current);
    if (next.metadata.deletionTimestamp) this.gc.enqueue(next.metadata.uid);
    return copyOut(type, next, view) as T;
  }

  private namespaceWaits(type: ResourceType, obj: StoredObj): boolean {
    return (
      type.kind === 'Namespace' && type.group === '' && this.lookups.namespaceHasContent(obj.metadata.name)
    );
  }

  private acceptCrd(obj: StoredObj): void {
    for (const t of acceptCrd(obj, (t) => this.registry.isReserved(t))) this.registerType(t);
  }

  private restore(o: StoredObject): void {
    const obj = o.object as StoredObj;
    this.objects.put(o.kind, obj);
    if (o.kind === storageKind(CustomResourceDefinitionType)) {
      for (const t of restoredCrdTypes(obj, (t) => this.registry.isReserved(t))) this.registerType(t);
    }
  }

  private remove(kind: string, obj: StoredObj, old?: StoredObj): { obj: StoredObj; done: Promise<void> } {
    const current = this.find(kind, obj.metadata.namespace, obj.metadata.name)!;
    const removed = this.changes.remove(kind, current, obj, old);
    // Owners waiting for this dependent (foreground), and its own dependents (background).
    for (const ref of current.metadata.ownerReferences ?? []) this.gc.enqueue(ref.uid);
    this.gc.enqueue(current.metadata.uid);
    if (current.metadata.namespace) {
      const nsObj = this.find(storageKind(builtinTypes[0]), undefined, current.metadata.namespace);
      if (nsObj?.metadata.deletionTimestamp) this.gc.enqueue(nsObj.metadata.uid);
    }
    return removed;
  }

  private assertWritable(): void {
    if (this.closed) throw new ApiError(503, 'ServiceUnavailable', 'the embedded store is closed');
  }

  private find(kind: string, ns: string | undefined, name: string): StoredObj | undefined {
    return this.objects.find(kind, ns, name);
  }
}
