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
import {
  ApiError,
  alreadyExists,
  badRequest,
  conflict,
  ForbiddenError,
  invalid,
  NotFoundError,
  notFound,
} from '../errors';
import { jsonEqual, jsonPatch, mergePatch } from '../patch';
import {
  apiVersionOf,
  builtinTypes,
  CustomResourceDefinitionType,
  kubevirtTypes,
  typesFromCrd,
} from '../resources';
import { parseFieldSelector, parseLabelSelector } from '../selectors';
import type {
  DeleteOptions,
  DeleteResult,
  JsonPatchOp,
  KubeList,
  KubeObject,
  ListOptions,
  ObjectClient,
  ObjectMeta,
  PatchOptions,
  ResourceType,
  WatchEvent,
  WatchHandle,
  WatchOptions,
  WriteOptions,
} from '../types';
import { GarbageCollector } from './garbage-collector';
import { GroupCommit } from './group-commit';
import { Journal, type JournalRecord, type StoredObject } from './journal';
import { ObjectIndex } from './object-index';
import {
  applyMerge,
  copyOut,
  crdNameCauses,
  keyOfObj,
  now,
  serializeRecord,
  specPart,
  storageKind,
} from './store-rules';
import type { EmbeddedStoreOptions, StoredObj } from './store-types';
import { metadataShapeCauses, validateMetadata } from './validation';
import { WatchHub } from './watch-hub';

export { MAX_OBJECT_BYTES } from './store-rules';
export type { EmbeddedStoreOptions, StoredObj } from './store-types';

const FOREGROUND = 'foregroundDeletion';
const ORPHAN = 'orphan';

/** The embedded store; it implements `ObjectClient`, so controllers use it like an API server. */
export class EmbeddedStore implements ObjectClient {
  private readonly objects = new ObjectIndex();
  private readonly typesByPath = new Map<string, ResourceType>();
  private readonly typesByKind = new Map<string, ResourceType>();
  /** `group/plural` and `group/Kind` of the kinds served without a CRD: no CRD may take them over. */
  private readonly reserved = new Set<string>();
  private readonly watches: WatchHub;
  private rv = 0;
  private readonly commits?: GroupCommit;
  private closed = false;
  private readonly gc: GarbageCollector;

  private constructor(
    private readonly journal: Journal | undefined,
    options: EmbeddedStoreOptions,
  ) {
    this.watches = new WatchHub(
      { rv: () => this.rv, listNow: (type, opts) => this.listNow(type, opts) },
      options.watchHistory ?? 10_000,
      options.bookmarkIntervalMs ?? 5000,
    );
    for (const t of [...builtinTypes, ...kubevirtTypes, ...(options.types ?? [])]) {
      this.registerType(t);
      this.reserved.add(`${t.group}/${t.plural}`).add(`${t.group}/${t.kind}`);
    }
    this.gc = new GarbageCollector(this);
    if (journal) {
      this.commits = new GroupCommit(journal, () => ({ rv: this.rv, objects: this.objects.all() }));
    }
  }

  /** Opens (and recovers) a store; with `dir` it is persisted there. */
  static async open(options: EmbeddedStoreOptions = {}): Promise<EmbeddedStore> {
    const journal = options.dir
      ? new Journal(options.dir, { snapshotEvery: options.snapshotEvery, fsync: options.fsync })
      : undefined;
    const store = new EmbeddedStore(journal, options);
    if (journal) {
      const rec = journal.load();
      store.rv = rec.rv;
      for (const o of rec.objects) store.restore(o);
      store.watches.resetHistory(store.rv);
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
    return String(this.rv);
  }

  /** Makes a kind known (CRD objects register theirs automatically). */
  registerType(type: ResourceType): void {
    this.typesByPath.set(`${type.group}/${type.version}/${type.plural}`, type);
    if (!this.typesByKind.has(storageKind(type))) this.typesByKind.set(storageKind(type), type);
    this.objects.addKind(storageKind(type));
  }

  /** The kind served at `group/version/plural`, if known (used by the REST server). */
  resolveType(group: string, version: string, plural: string): ResourceType | undefined {
    return this.typesByPath.get(`${group}/${version}/${plural}`);
  }

  /** Every known kind. */
  types(): ResourceType[] {
    return [...this.typesByPath.values()];
  }

  /** Drops the watch history: watches from any earlier resourceVersion now get 410 Gone. */
  compactHistory(): void {
    this.watches.resetHistory(this.rv);
  }

  /** Stops watches, writes what is pending and releases the directory. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.gc.stop();
    this.watches.closeAll();
    // Everything acknowledged or queued reaches the disk before the files close.
    await this.commits?.drain();
    this.journal?.close();
  }

  // ---- ObjectClient -------------------------------------------------------------------

  async get<T extends KubeObject>(type: ResourceType, name: string, namespace?: string): Promise<T> {
    const ns = this.ns(type, namespace);
    const obj = this.find(this.kindOf(type), ns, name);
    if (!obj) throw notFound(type.group, type.plural, name);
    return copyOut(type, obj) as T;
  }

  async list<T extends KubeObject>(type: ResourceType, options: ListOptions = {}): Promise<KubeList<T>> {
    return this.listNow<T>(type, options);
  }

  /** `list` without a yield: a watch registers in the same turn as its initial list. */
  private listNow<T extends KubeObject>(type: ResourceType, options: ListOptions): KubeList<T> {
    const label = parseLabelSelector(options.labelSelector);
    const field = parseFieldSelector(options.fieldSelector);
    const all = this.objects.ofKind(this.kindOf(type));
    const ns = type.namespaced ? options.namespace : undefined;
    let keys = [...all.keys()].sort();
    if (options.continue) {
      const after = Buffer.from(options.continue, 'base64url').toString();
      keys = keys.filter((k) => k > after);
    }
    const items: T[] = [];
    let cont: string | undefined;
    for (const k of keys) {
      const obj = all.get(k)!;
      if (ns && obj.metadata.namespace !== ns) continue;
      if (!label.matches(obj.metadata.labels) || !field.matches(obj)) continue;
      if (options.limit && items.length === options.limit) {
        cont = Buffer.from(keyOfObj(items[items.length - 1] as StoredObj)).toString('base64url');
        break;
      }
      items.push(copyOut(type, obj) as T);
    }
    return {
      apiVersion: apiVersionOf(type),
      kind: `${type.kind}List`,
      metadata: { resourceVersion: String(this.rv), ...(cont ? { continue: cont } : {}) },
      items,
    };
  }

  async watch<T extends KubeObject>(
    type: ResourceType,
    options: WatchOptions,
    onEvent: (event: WatchEvent<T>) => void,
  ): Promise<WatchHandle> {
    if (this.closed) throw new ApiError(503, 'ServiceUnavailable', 'the embedded store is closed');
    return this.watches.watch(type, this.kindOf(type), options, onEvent);
  }

  async create<T extends KubeObject>(type: ResourceType, object: T, options: WriteOptions = {}): Promise<T> {
    this.assertWritable();
    const kind = this.kindOf(type);
    const obj = structuredClone(object) as unknown as StoredObj;
    this.checkKind(type, obj);
    if (!obj.metadata) obj.metadata = {} as StoredObj['metadata'];
    const meta = obj.metadata;
    if (!type.namespaced) delete meta.namespace;
    const ns = this.ns(type, meta.namespace);
    if (type.namespaced) meta.namespace = ns;
    if (!meta.name && meta.generateName) meta.name = meta.generateName + randomUUID().slice(0, 5);
    const causes = validateMetadata(type, obj);
    if (causes.length) throw invalid(type.kind, meta.name ?? '', causes);
    if (type.namespaced) this.requireNamespace(ns!);
    if (this.find(kind, ns, meta.name)) throw alreadyExists(type.group, type.plural, meta.name);
    meta.uid = randomUUID();
    meta.creationTimestamp = now();
    meta.generation = 1;
    delete meta.deletionTimestamp;
    delete (meta as ObjectMeta).resourceVersion;
    if (type.statusSubresource && type.kind !== 'CustomResourceDefinition') delete obj.status;
    if (kind === storageKind(CustomResourceDefinitionType)) this.acceptCrd(obj);
    if (kind === storageKind(builtinTypes[0])) obj.status = { phase: 'Active' };
    if (options.dryRun) return copyOut(type, { ...obj, metadata: { ...meta, resourceVersion: '' } }) as T;
    const done = this.put(kind, obj, 'ADDED');
    await done;
    return copyOut(type, obj) as T;
  }

  async update<T extends KubeObject>(type: ResourceType, object: T, options: WriteOptions = {}): Promise<T> {
    return this.replace(type, object, false, options);
  }

  async updateStatus<T extends KubeObject>(
    type: ResourceType,
    object: T,
    options: WriteOptions = {},
  ): Promise<T> {
    return this.replace(type, object, true, options);
  }

  async patch<T extends KubeObject>(
    type: ResourceType,
    name: string,
    patch: unknown,
    options: PatchOptions,
  ): Promise<T> {
    this.assertWritable();
    const ns = this.ns(type, options.namespace);
    const current = this.find(this.kindOf(type), ns, name);
    if (options.type === 'apply') {
      if (!options.fieldManager) {
        throw invalid('PatchOptions', '', [
          {
            reason: 'FieldValueRequired',
            field: 'fieldManager',
            message: 'Required value: is required for apply patch',
          },
        ]);
      }
      if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) {
        throw badRequest('an apply patch must be an object');
      }
      const body = patch as KubeObject;
      const shape = metadataShapeCauses(body);
      if (shape.length) throw invalid(type.kind, name, shape);
      if (body.metadata?.name && body.metadata.name !== name) {
        throw badRequest(
          `the name of the object (${body.metadata.name}) does not match the name on the URL (${name})`,
        );
      }
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
    const base = copyOut(type, current);
    let next: KubeObject;
    switch (options.type) {
      case 'merge':
        if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) {
          throw badRequest('a merge patch must be a JSON object');
        }
        next = mergePatch(base, patch) as KubeObject;
        break;
      case 'apply':
        next = applyMerge(base, patch) as KubeObject;
        break;
      case 'json':
        next = jsonPatch(base, patch as JsonPatchOp[]) as KubeObject;
        break;
      default:
        throw badRequest(`unsupported patch type "${(options as { type: string }).type}"`);
    }
    // A resourceVersion in the patch is a precondition; otherwise the patch applies to the current version.
    return this.replace(type, next, options.subresource === 'status', options, current);
  }

  async delete<T extends KubeObject>(
    type: ResourceType,
    name: string,
    options: DeleteOptions = {},
  ): Promise<DeleteResult<T>> {
    this.assertWritable();
    const kind = this.kindOf(type);
    const ns = this.ns(type, options.namespace);
    const current = this.find(kind, ns, name);
    if (!current) throw notFound(type.group, type.plural, name);
    const pre = options.preconditions;
    if (pre?.uid && pre.uid !== current.metadata.uid) {
      throw conflict(
        type.group,
        type.plural,
        name,
        `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${current.metadata.uid}`,
      );
    }
    if (pre?.resourceVersion && pre.resourceVersion !== current.metadata.resourceVersion) {
      throw conflict(
        type.group,
        type.plural,
        name,
        `Precondition failed: ResourceVersion in precondition: ${pre.resourceVersion}, ResourceVersion in object meta: ${current.metadata.resourceVersion}`,
      );
    }
    const next = structuredClone(current);
    const finalizers = new Set(next.metadata.finalizers ?? []);
    const policy = options.propagationPolicy;
    if (policy === 'Foreground') {
      finalizers.delete(ORPHAN);
      finalizers.add(FOREGROUND);
    } else if (policy === 'Orphan') {
      finalizers.delete(FOREGROUND);
      finalizers.add(ORPHAN);
    } else if (policy === 'Background') {
      finalizers.delete(FOREGROUND);
      finalizers.delete(ORPHAN);
    }
    // As on a cluster, foreground/orphan deletion always goes through the finalizer (even with
    // no dependents): the caller sees `pending`, and the garbage collector finishes it.
    const terminatingNamespace =
      type.kind === 'Namespace' && type.group === '' && this.namespaceHasContent(name);
    if (options.dryRun) return { pending: finalizers.size > 0, object: copyOut(type, current) as T };
    if (finalizers.size > 0 || terminatingNamespace) {
      const changed =
        !current.metadata.deletionTimestamp ||
        !jsonEqual([...finalizers].sort(), [...(current.metadata.finalizers ?? [])].sort());
      if (changed) {
        if (!next.metadata.deletionTimestamp) {
          next.metadata.deletionTimestamp = now();
          next.metadata.deletionGracePeriodSeconds = 0;
          next.metadata.generation = (next.metadata.generation ?? 0) + 1;
          if (terminatingNamespace) next.status = { ...(next.status as object), phase: 'Terminating' };
        }
        next.metadata.finalizers = [...finalizers];
        if (next.metadata.finalizers.length === 0) delete next.metadata.finalizers;
        await this.put(kind, next, 'MODIFIED', current);
      }
      this.gc.enqueue(next.metadata.uid);
      return { pending: true, object: copyOut(type, changed ? next : current) as T };
    }
    const removed = this.remove(kind, current);
    await removed.done;
    return { pending: false, object: copyOut(type, removed.obj) as T };
  }

  // ---- internals used by the garbage collector ---------------------------------------

  /** @internal The object with this uid, and its kind. */
  byUidLookup(uid: string): { type: ResourceType; obj: StoredObj } | undefined {
    const found = this.objects.byUidLookup(uid);
    return found && { type: this.typesByKind.get(found.kind)!, obj: found.obj };
  }

  /** @internal Dependents of an owner uid. */
  dependentsOf(uid: string): { type: ResourceType; obj: StoredObj }[] {
    return this.objects
      .dependentsOf(uid)
      .map(({ kind, obj }) => ({ type: this.typesByKind.get(kind)!, obj }));
  }

  /** @internal Every namespaced object in a namespace. */
  contentsOf(namespace: string): { type: ResourceType; obj: StoredObj }[] {
    const out: { type: ResourceType; obj: StoredObj }[] = [];
    for (const { kind, object } of this.objects.all()) {
      const type = this.typesByKind.get(kind)!;
      if (type.namespaced && object.metadata.namespace === namespace)
        out.push({ type, obj: object as StoredObj });
    }
    return out;
  }

  /** @internal uids of objects whose deletion is in progress (for recovery after restart). */
  deletingUids(): string[] {
    const out: string[] = [];
    for (const { obj: o } of this.objects.entries()) {
      if (o.metadata.deletionTimestamp || o.metadata.ownerReferences?.length) out.push(o.metadata.uid);
    }
    return out;
  }

  /** @internal Finishes deleting a terminating namespace once it is empty. */
  async finishNamespace(obj: StoredObj): Promise<void> {
    if (obj.metadata.finalizers?.length) return;
    await this.remove(storageKind(builtinTypes[0]), obj).done;
  }

  // ---- private ------------------------------------------------------------------------

  private async replace<T extends KubeObject>(
    type: ResourceType,
    object: KubeObject,
    status: boolean,
    options: WriteOptions,
    expected?: StoredObj,
  ): Promise<T> {
    this.assertWritable();
    const kind = this.kindOf(type);
    const input = structuredClone(object) as StoredObj;
    this.checkKind(type, input);
    const meta = input.metadata ?? ({} as StoredObj['metadata']);
    const ns = this.ns(type, meta.namespace);
    const name = meta.name;
    if (!name) {
      throw invalid(type.kind, '', [
        { reason: 'FieldValueRequired', field: 'metadata.name', message: 'Required value: name is required' },
      ]);
    }
    const current = this.find(kind, ns, name);
    if (!current) throw notFound(type.group, type.plural, name);
    if (expected && expected !== current) {
      throw conflict(
        type.group,
        type.plural,
        name,
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    }
    if (meta.resourceVersion && meta.resourceVersion !== current.metadata.resourceVersion) {
      throw conflict(
        type.group,
        type.plural,
        name,
        'the object has been modified; please apply your changes to the latest version and try again',
      );
    }
    if (meta.uid && meta.uid !== current.metadata.uid) {
      throw conflict(
        type.group,
        type.plural,
        name,
        `Precondition failed: UID in precondition: ${meta.uid}, UID in object meta: ${current.metadata.uid}`,
      );
    }
    let next: StoredObj;
    if (status) {
      next = { ...structuredClone(current), status: input.status };
      if (input.status === undefined) delete next.status;
    } else {
      next = input;
      if (type.statusSubresource) {
        if (current.status === undefined) delete next.status;
        else next.status = structuredClone(current.status);
      }
      const causes = validateMetadata(type, next);
      if (causes.length) throw invalid(type.kind, name, causes);
      // Server-owned metadata stays as stored.
      next.metadata.namespace = current.metadata.namespace;
      if (!type.namespaced) delete next.metadata.namespace;
      next.metadata.uid = current.metadata.uid;
      next.metadata.creationTimestamp = current.metadata.creationTimestamp;
      next.metadata.generation = current.metadata.generation;
      if (current.metadata.deletionTimestamp) {
        next.metadata.deletionTimestamp = current.metadata.deletionTimestamp;
        next.metadata.deletionGracePeriodSeconds = current.metadata.deletionGracePeriodSeconds;
      } else {
        delete next.metadata.deletionTimestamp;
        delete next.metadata.deletionGracePeriodSeconds;
      }
      if (!jsonEqual(specPart(current, type), specPart(next, type))) {
        next.metadata.generation = (current.metadata.generation ?? 0) + 1;
      }
      if (kind === storageKind(CustomResourceDefinitionType)) this.acceptCrd(next);
    }
    next.apiVersion = current.apiVersion;
    next.kind = current.kind;
    next.metadata.resourceVersion = current.metadata.resourceVersion;
    if (jsonEqual(next, current)) return copyOut(type, current) as T; // no-op writes do not bump resourceVersion
    if (options.dryRun) return copyOut(type, next) as T;
    if (
      next.metadata.deletionTimestamp &&
      !next.metadata.finalizers?.length &&
      !this.namespaceWaits(type, next)
    ) {
      const removed = this.remove(kind, next, current);
      await removed.done;
      return copyOut(type, removed.obj) as T;
    }
    await this.put(kind, next, 'MODIFIED', current);
    if (next.metadata.deletionTimestamp) this.gc.enqueue(next.metadata.uid);
    return copyOut(type, next) as T;
  }

  private namespaceWaits(type: ResourceType, obj: StoredObj): boolean {
    return type.kind === 'Namespace' && type.group === '' && this.namespaceHasContent(obj.metadata.name);
  }

  private namespaceHasContent(ns: string): boolean {
    for (const { kind, obj } of this.objects.entries()) {
      if (this.typesByKind.get(kind)?.namespaced && obj.metadata.namespace === ns) return true;
    }
    return false;
  }

  private acceptCrd(obj: StoredObj): void {
    const types = typesFromCrd(obj);
    if (types.length === 0) {
      throw invalid('CustomResourceDefinition', obj.metadata.name, [
        {
          field: 'spec',
          message: 'Invalid value: group, names.kind, names.plural and versions are required',
        },
      ]);
    }
    const causes = crdNameCauses(obj, types[0]);
    const t = types[0];
    // As the API server, a CRD cannot serve a kind the server already serves itself.
    if (this.reserved.has(`${t.group}/${t.plural}`) || this.reserved.has(`${t.group}/${t.kind}`)) {
      causes.push({
        reason: 'FieldValueForbidden',
        field: 'spec.names',
        message: `Forbidden: ${t.plural}.${t.group} (kind ${t.kind}) is served by a built-in API`,
      });
    }
    if (causes.length) throw invalid('CustomResourceDefinition', obj.metadata.name, causes);
    for (const t of types) this.registerType(t);
    const status = (obj.status ?? {}) as { conditions?: unknown[] };
    obj.status = {
      ...status,
      conditions: [
        { type: 'NamesAccepted', status: 'True', reason: 'NoConflicts', lastTransitionTime: now() },
        { type: 'Established', status: 'True', reason: 'InitialNamesAccepted', lastTransitionTime: now() },
      ],
      acceptedNames: (obj.spec as { names?: unknown }).names,
      storedVersions: types.map((t) => t.version).slice(0, 1),
    };
  }

  private restore(o: StoredObject): void {
    const obj = o.object as StoredObj;
    this.objects.put(o.kind, obj);
    if (o.kind === storageKind(CustomResourceDefinitionType)) {
      // A CRD stored before built-in kinds were reserved must not take one over on restart.
      for (const t of typesFromCrd(obj))
        if (!this.reserved.has(`${t.group}/${t.plural}`) && !this.reserved.has(`${t.group}/${t.kind}`))
          this.registerType(t);
    }
  }

  private put(kind: string, obj: StoredObj, type: 'ADDED' | 'MODIFIED', old?: StoredObj): Promise<void> {
    const rv = this.rv + 1;
    obj.metadata.resourceVersion = String(rv);
    const stored = obj;
    const typ = this.typesByKind.get(kind)!;
    stored.apiVersion = apiVersionOf(typ);
    stored.kind = typ.kind;
    // Serialized (and its size checked) before anything changes: a refused write changes nothing.
    const line = serializeRecord(typ, { rv, op: 'put', kind, object: stored });
    this.rv = rv;
    this.objects.put(kind, stored, old);
    this.watches.record({ rv: this.rv, kind, type, obj: stored, old });
    return this.commit(line);
  }

  private remove(kind: string, obj: StoredObj, old?: StoredObj): { obj: StoredObj; done: Promise<void> } {
    this.rv++;
    const current = this.find(kind, obj.metadata.namespace, obj.metadata.name)!;
    const last = structuredClone(obj);
    last.metadata.resourceVersion = String(this.rv);
    this.objects.delete(kind, current);
    this.watches.record({ rv: this.rv, kind, type: 'DELETED', obj: last, old: old ?? current });
    // Owners waiting for this dependent (foreground), and its own dependents (background).
    for (const ref of current.metadata.ownerReferences ?? []) this.gc.enqueue(ref.uid);
    this.gc.enqueue(current.metadata.uid);
    if (current.metadata.namespace) {
      const nsObj = this.find(storageKind(builtinTypes[0]), undefined, current.metadata.namespace);
      if (nsObj?.metadata.deletionTimestamp) this.gc.enqueue(nsObj.metadata.uid);
    }
    const done = this.commit(
      JSON.stringify({
        rv: this.rv,
        op: 'del',
        kind,
        namespace: current.metadata.namespace,
        name: current.metadata.name,
      } satisfies JournalRecord),
    );
    return { obj: last, done };
  }

  private commit(line: string): Promise<void> {
    return this.commits ? this.commits.commit(line) : Promise.resolve();
  }

  private assertWritable(): void {
    if (this.closed) throw new ApiError(503, 'ServiceUnavailable', 'the embedded store is closed');
  }

  private kindOf(type: ResourceType): string {
    const kind = storageKind(type);
    if (!this.typesByPath.has(`${type.group}/${type.version}/${type.plural}`)) {
      throw new NotFoundError(
        404,
        'NotFound',
        `the server could not find the requested resource (${type.plural}.${type.group || 'core'}/${type.version}); create its CustomResourceDefinition first`,
      );
    }
    return kind;
  }

  private ns(type: ResourceType, namespace: string | undefined): string | undefined {
    if (!type.namespaced) return undefined;
    if (!namespace) throw badRequest(`${type.kind} is namespaced: a namespace is required`);
    return namespace;
  }

  private requireNamespace(ns: string): void {
    const nsObj = this.find(storageKind(builtinTypes[0]), undefined, ns);
    if (!nsObj) throw notFound('', 'namespaces', ns);
    if (nsObj.metadata.deletionTimestamp) {
      throw new ForbiddenError(
        403,
        'Forbidden',
        `unable to create new content in namespace ${ns} because it is being terminated`,
      );
    }
  }

  private checkKind(type: ResourceType, obj: Record<string, unknown>): void {
    if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) {
      throw badRequest(`the ${type.kind} must be a JSON object`);
    }
    const shape = metadataShapeCauses(obj as KubeObject);
    if (shape.length) throw invalid(type.kind, '', shape);
    if (obj.kind !== undefined && obj.kind !== type.kind) {
      throw badRequest(
        `the kind of the object (${String(obj.kind)}) does not match the resource (${type.kind})`,
      );
    }
    if (obj.apiVersion !== undefined && obj.apiVersion !== apiVersionOf(type)) {
      throw badRequest(
        `the apiVersion of the object (${String(obj.apiVersion)}) does not match the resource (${apiVersionOf(type)})`,
      );
    }
  }

  private find(kind: string, ns: string | undefined, name: string): StoredObj | undefined {
    return this.objects.find(kind, ns, name);
  }
}
