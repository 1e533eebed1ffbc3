/**
 * An informer keeps a local cache of one kind in step with the server: it lists, then
 * watches from the list's resourceVersion (with bookmarks), resumes a closed watch from
 * the last resourceVersion it saw, and relists when that version is gone (410). Every
 * retry, of any kind, first waits an exponential backoff, so a server that closes watches
 * at once or refuses connections never sees a tight loop. Handlers are called in event
 * order, one at a time.
 */
import { Backoff, type BackoffOptions, sleep } from './backoff';
import { Indexer } from './cache';
import { isGone } from './errors';
import { objectKey } from './resources';
import { runtimeError, runtimeWarn } from './runtime-log';
import type { KubeObject, ObjectClient, ResourceType, WatchEvent, WatchHandle } from './types';

/** Callbacks for cache changes. `onUpdate` also fires on resync with old === new. */
export interface EventHandler<T extends KubeObject> {
  onAdd?(obj: T): void;
  onUpdate?(oldObj: T, newObj: T): void;
  /** Called with the last known state (after a relist, the state before the object vanished). */
  onDelete?(obj: T): void;
}

/** What an informer watches (namespace, label/field selectors), and its resync, retry and watch settings. */
export interface InformerOptions {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
  /** Calls onUpdate(obj, obj) for every cached object this often (default: never). */
  resyncPeriodMs?: number;
  /** Backoff between list/watch retries (default 200 ms doubling to 30 s). */
  backoff?: BackoffOptions;
  /** Server-side watch timeout; the watch is then resumed (default 300 s plus jitter). */
  watchTimeoutSeconds?: number;
  /** Reports list/watch failures (default: the runtime log, see runtime-log.ts). */
  onError?: (err: Error) => void;
  /**
   * Applied to every listed and watched object before it is cached or handed to handlers
   * (client-go's SetTransform). Default {@link stripManagedFields}.
   */
  transform?: <O extends KubeObject>(obj: O) => O;
}

/**
 * The object without metadata.managedFields (client-go's TransformStripManagedFields):
 * server-side apply's bookkeeping, often larger than the rest of the metadata, and read by
 * no controller; an update sent without it keeps the server's. A copy when there is
 * anything to drop (objects may be shared with an in-process store), else `obj` itself.
 */
export function stripManagedFields<O extends KubeObject>(obj: O): O {
  if (!obj.metadata?.managedFields) return obj;
  const { managedFields: _, ...metadata } = obj.metadata;
  return { ...obj, metadata };
}

/** Counters, for tests and metrics. */
export interface InformerStats {
  lists: number;
  watches: number;
  /** Relists caused by 410 Gone. */
  gone: number;
  events: number;
  /** The last backoff waited before a retry, in ms. */
  lastBackoffMs: number;
}

/**
 * Keeps `indexer`, a cache of one kind, in step with the server by list and watch (see
 * the file comment), and calls its event handlers on each change.
 */
export class Informer<T extends KubeObject = KubeObject> {
  readonly indexer = new Indexer<T>();
  readonly stats: InformerStats = { lists: 0, watches: 0, gone: 0, events: 0, lastBackoffMs: 0 };
  private readonly handlers: EventHandler<T>[] = [];
  private readonly abort = new AbortController();
  private synced = false;
  private syncWaiters: (() => void)[] = [];
  private running?: Promise<void>;
  private watch?: WatchHandle;
  private resync?: NodeJS.Timeout;
  private rv = '';

  constructor(
    private readonly client: ObjectClient,
    readonly type: ResourceType,
    private readonly options: InformerOptions = {},
  ) {
    this.transform = options.transform ?? stripManagedFields;
  }

  private readonly transform: <O extends KubeObject>(obj: O) => O;

  /** The resourceVersion the cache reflects. */
  get resourceVersion(): string {
    return this.rv;
  }

  /** Adds handlers; when the cache is already filled, onAdd is called for what it holds. */
  addEventHandler(handler: EventHandler<T>): void {
    this.handlers.push(handler);
    if (this.synced) for (const o of this.indexer.list()) this.call(handler, 'onAdd', o);
  }

  /** Starts listing and watching in the background (idempotent). */
  start(): void {
    if (this.running || this.abort.signal.aborted) return;
    this.running = this.run();
    if (this.options.resyncPeriodMs) {
      this.resync = setInterval(() => {
        for (const o of this.indexer.list()) this.emit('onUpdate', o, o);
      }, this.options.resyncPeriodMs);
      this.resync.unref();
    }
  }

  hasSynced(): boolean {
    return this.synced;
  }

  /** Resolves once the first list is in the cache (or at once when stopped). */
  waitForSync(): Promise<void> {
    if (this.synced || this.abort.signal.aborted) return Promise.resolve();
    return new Promise((r) => this.syncWaiters.push(r));
  }

  /** Stops watching; resolves when the loop has ended. */
  async stop(): Promise<void> {
    this.abort.abort();
    this.watch?.stop();
    if (this.resync) clearInterval(this.resync);
    for (const w of this.syncWaiters) w();
    this.syncWaiters = [];
    await this.running;
  }

  private async run(): Promise<void> {
    const signal = this.abort.signal;
    const backoff = new Backoff({ initialMs: 200, maxMs: 30_000, ...this.options.backoff });
    const report =
      this.options.onError ?? ((e: Error) => runtimeWarn(`informer ${this.type.plural}: ${e.message}`));
    let needList = true;
    while (!signal.aborted) {
      try {
        if (needList) {
          await this.list();
          needList = false;
        }
        const started = Date.now();
        const before = this.stats.events;
        const timeout = this.options.watchTimeoutSeconds ?? 300 + Math.floor(Math.random() * 60);
        this.stats.watches++;
        this.watch = await this.client.watch<T>(
          this.type,
          {
            namespace: this.options.namespace,
            labelSelector: this.options.labelSelector,
            fieldSelector: this.options.fieldSelector,
            resourceVersion: this.rv,
            allowWatchBookmarks: true,
            timeoutSeconds: timeout,
          },
          (ev) => this.apply(ev),
        );
        if (signal.aborted) this.watch.stop();
        const err = await this.watch.closed;
        if (signal.aborted) break;
        if (err) throw err;
        // A watch that lived or delivered is healthy: start the backoff over.
        if (Date.now() - started > 1000 || this.stats.events > before) backoff.reset();
      } catch (err) {
        if (signal.aborted) break;
        if (isGone(err)) {
          this.stats.gone++;
          needList = true;
        } else report(err as Error);
      }
      this.stats.lastBackoffMs = backoff.next();
      await sleep(this.stats.lastBackoffMs, signal);
    }
  }

  private async list(): Promise<void> {
    this.stats.lists++;
    const items: T[] = [];
    let cont: string | undefined;
    let rv = '';
    do {
      const page = await this.client.list<T>(this.type, {
        namespace: this.options.namespace,
        labelSelector: this.options.labelSelector,
        fieldSelector: this.options.fieldSelector,
        limit: 500,
        continue: cont,
      });
      for (const o of page.items) items.push(this.transform(o));
      cont = page.metadata.continue;
      if (!rv) rv = page.metadata.resourceVersion;
    } while (cont);
    this.replace(items, rv);
  }

  /** Makes the cache equal to a fresh list, emitting the differences. */
  private replace(items: T[], rv: string): void {
    const seen = new Set<string>();
    for (const o of items) {
      const key = objectKey(o);
      seen.add(key);
      const old = this.indexer.get(key);
      if (old && old.metadata?.resourceVersion === o.metadata?.resourceVersion) continue;
      this.indexer.set(o);
      if (old) this.emit('onUpdate', old, o);
      else this.emit('onAdd', o);
    }
    for (const key of this.indexer.keys()) {
      if (seen.has(key)) continue;
      const old = this.indexer.delete(key)!;
      this.emit('onDelete', old);
    }
    this.rv = rv;
    if (!this.synced) {
      this.synced = true;
      for (const w of this.syncWaiters) w();
      this.syncWaiters = [];
    }
  }

  private apply(ev: WatchEvent<T>): void {
    const rv = ev.object.metadata?.resourceVersion;
    if (ev.type === 'BOOKMARK') {
      if (rv) this.rv = rv;
      return;
    }
    this.stats.events++;
    const obj = this.transform(ev.object);
    const key = objectKey(obj);
    if (ev.type === 'DELETED') {
      const old = this.indexer.delete(key);
      this.emit('onDelete', obj ?? old);
    } else {
      const old = this.indexer.get(key);
      if (!(old && old.metadata?.resourceVersion === rv)) {
        this.indexer.set(obj);
        if (old) this.emit('onUpdate', old, obj);
        else this.emit('onAdd', obj);
      }
    }
    if (rv) this.rv = rv;
  }

  private emit(kind: 'onAdd' | 'onDelete', obj: T): void;
  private emit(kind: 'onUpdate', old: T, obj: T): void;
  private emit(kind: keyof EventHandler<T>, a: T, b?: T): void {
    for (const h of this.handlers) this.call(h, kind, a, b);
  }

  private call(h: EventHandler<T>, kind: keyof EventHandler<T>, a: T, b?: T): void {
    try {
      if (kind === 'onUpdate') h.onUpdate?.(a, b!);
      else h[kind]?.(a);
    } catch (err) {
      runtimeError(`informer ${this.type.plural}: ${kind} handler failed: ${(err as Error).message}`);
    }
  }
}

/** Options of one informer in a factory (its identity: two equal requests share one informer). */
export interface InformerRequest {
  namespace?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

/**
 * Shares one informer (one list+watch, one cache) per kind and selector among every
 * controller that asks for it.
 */
export class SharedInformerFactory {
  private readonly informers = new Map<string, Informer<KubeObject>>();
  private started = false;

  constructor(
    private readonly client: ObjectClient,
    private readonly defaults: Omit<InformerOptions, keyof InformerRequest> & { namespace?: string } = {},
  ) {}

  /** The shared informer for `type` (created on first request; started if the factory is). */
  informerFor<T extends KubeObject>(type: ResourceType, request: InformerRequest = {}): Informer<T> {
    const namespace = type.namespaced ? (request.namespace ?? this.defaults.namespace) : undefined;
    const key = [
      type.group,
      type.version,
      type.plural,
      namespace,
      request.labelSelector,
      request.fieldSelector,
    ].join('|');
    let inf = this.informers.get(key);
    if (!inf) {
      inf = new Informer(this.client, type, { ...this.defaults, ...request, namespace });
      this.informers.set(key, inf);
      if (this.started) inf.start();
    }
    return inf as unknown as Informer<T>;
  }

  /** Starts every informer, and those requested later. */
  start(): void {
    this.started = true;
    for (const inf of this.informers.values()) inf.start();
  }

  /** Resolves once every informer has filled its cache. */
  async waitForCacheSync(): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.waitForSync()));
  }

  all(): Informer<KubeObject>[] {
    return [...this.informers.values()];
  }

  async shutdown(): Promise<void> {
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }
}
