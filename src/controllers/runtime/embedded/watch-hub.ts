/**
 * The embedded store's watches: the history window of events, replay from a
 * resourceVersion (410 Gone before the window), delivery in resourceVersion order with
 * selector transitions (an object leaving a watch's selector is DELETED to it), bookmarks
 * and timeouts. The store records every write here; it owns no object state.
 */
import { badRequest, gone } from '../errors';
import { apiVersionOf } from '../resources';
import { parseFieldSelector, parseLabelSelector } from '../selectors';
import type {
  KubeList,
  KubeObject,
  ListOptions,
  ResourceType,
  WatchEvent,
  WatchHandle,
  WatchOptions,
} from '../types';
import { copyOut, SERVING, type Served } from './store-rules';
import type { StoredObj } from './store-types';
import { type IndexedWatch, WatcherIndex } from './watcher-index';

/** One write, as watches see it. */
export interface HistoryEvent {
  rv: number;
  kind: string;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  obj: StoredObj;
  old?: StoredObj;
}

interface Watcher extends IndexedWatch {
  kind: string;
  type: ResourceType;
  namespace?: string;
  /** Gets read-only views, not copies (the REST server's watches: store-rules' SERVING). */
  view: boolean;
  matches(obj: StoredObj): boolean;
  send(ev: WatchEvent): void;
  close(err?: Error): void;
}

/** What the hub reads from its store. */
export interface WatchSource {
  /** The store's current resourceVersion. */
  rv(): number;
  /** A list taken in the same turn as the watch registers (no await in between). */
  listNow<T extends KubeObject>(type: ResourceType, options: ListOptions): KubeList<T>;
}

/** The longest delay a Node timer takes (2^31-1 ms); a longer one fires at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Watches of one embedded store. */
export class WatchHub {
  private readonly watchers = new Set<Watcher>();
  /** The same watches, by kind and selector equality, for dispatch. */
  private readonly index = new WatcherIndex<Watcher>();
  private history: HistoryEvent[] = [];
  private dispatchQueue: HistoryEvent[] = [];
  private dispatching = false;
  private historyStart = 0;

  constructor(
    private readonly source: WatchSource,
    private readonly watchHistory: number,
    private readonly bookmarkIntervalMs: number,
  ) {}

  /** Starts the history window at `rv` (after recovery, or after a compaction). */
  resetHistory(rv: number): void {
    this.history = [];
    this.historyStart = rv;
  }

  /** Ends every watch. */
  closeAll(): void {
    for (const w of [...this.watchers]) w.close();
  }

  /** Opens a watch on the storage kind `kind` of `type`. */
  watch<T extends KubeObject>(
    type: ResourceType,
    kind: string,
    options: WatchOptions & Served,
    onEvent: (event: WatchEvent<T>) => void,
  ): WatchHandle {
    const label = parseLabelSelector(options.labelSelector);
    const field = parseFieldSelector(options.fieldSelector);
    const ns = type.namespaced ? options.namespace : undefined;
    let resolveClosed!: (e: Error | undefined) => void;
    const closed = new Promise<Error | undefined>((r) => {
      resolveClosed = r;
    });
    const timers: NodeJS.Timeout[] = [];
    let stopped = false;
    const watcher: Watcher = {
      kind,
      type,
      namespace: ns,
      view: options[SERVING] === true,
      // A field equality (a node's pods: spec.nodeName=<node>) is the more selective where
      // both are given (those pods' label is every launcher's).
      field: field.equality,
      label: field.equality ? undefined : label.equality,
      matches: (obj) =>
        (!ns || obj.metadata.namespace === ns) && label.matches(obj.metadata.labels) && field.matches(obj),
      send: (ev) => {
        if (stopped) return;
        try {
          onEvent(ev as WatchEvent<T>);
        } catch (err) {
          watcher.close(err as Error);
        }
      },
      close: (err) => {
        if (stopped) return;
        stopped = true;
        for (const t of timers) clearInterval(t);
        this.watchers.delete(watcher);
        this.index.delete(watcher);
        resolveClosed(err);
      },
    };
    const handle: WatchHandle = { stop: () => watcher.close(), closed };

    const rvOpt = options.resourceVersion;
    if (rvOpt === undefined || rvOpt === '' || rvOpt === '0') {
      // No await between listing and registering: a write in between would be lost to this watch.
      const list = this.source.listNow(type, { ...options, limit: undefined, continue: undefined });
      this.register(watcher);
      for (const item of list.items) watcher.send({ type: 'ADDED', object: item });
    } else {
      const from = Number(rvOpt);
      if (!Number.isInteger(from) || from < 0) throw badRequest(`invalid resourceVersion "${rvOpt}"`);
      if (from < this.historyStart) {
        // As the API server: the watch opens, then ends with an Expired status.
        queueMicrotask(() => watcher.close(gone(`too old resource version: ${from} (${this.historyStart})`)));
        this.register(watcher);
        return handle;
      }
      this.register(watcher);
      for (const ev of this.historySince(from)) if (ev.kind === kind) this.deliver(watcher, ev);
    }
    if (options.allowWatchBookmarks) {
      const t = setInterval(() => {
        watcher.send({
          type: 'BOOKMARK',
          object: {
            apiVersion: apiVersionOf(type),
            kind: type.kind,
            metadata: { resourceVersion: String(this.source.rv()) },
          },
        });
      }, this.bookmarkIntervalMs);
      t.unref();
      timers.push(t);
    }
    if (options.timeoutSeconds) {
      // A Node timer fires at once past 2^31-1 ms (24.8 days): longer timeouts re-arm until due.
      const due = Date.now() + options.timeoutSeconds * 1000;
      const arm = () => {
        const left = due - Date.now();
        if (left <= 0) return watcher.close();
        const t = setTimeout(arm, Math.min(left, MAX_TIMER_MS));
        t.unref();
        timers[timerSlot] = t;
      };
      const timerSlot = timers.length;
      timers.push(undefined as unknown as NodeJS.Timeout);
      arm();
    }
    return handle;
  }

  private register(w: Watcher): void {
    this.watchers.add(w);
    this.index.add(w);
  }

  /** Records a write and delivers it to the watches of its kind. */
  record(ev: HistoryEvent): void {
    this.history.push(ev);
    if (this.history.length > this.watchHistory * 1.25) {
      const drop = this.history.length - this.watchHistory;
      this.historyStart = this.history[drop - 1].rv;
      this.history = this.history.slice(drop);
    }
    // A watcher that writes from its callback must not overtake the event being delivered:
    // events are dispatched strictly in resourceVersion order, re-entrant writes queue up.
    this.dispatchQueue.push(ev);
    if (this.dispatching) return;
    this.dispatching = true;
    try {
      for (let i = 0; i < this.dispatchQueue.length; i++) {
        const e = this.dispatchQueue[i];
        const copies = new Map<string, KubeObject>();
        for (const w of this.index.candidates(e.kind, e.obj, e.old)) this.deliver(w, e, copies);
      }
    } finally {
      this.dispatchQueue = [];
      this.dispatching = false;
    }
  }

  /**
   * Sends one event to one watcher. Watchers of the same apiVersion share one copy of the
   * object per event (cached objects are read-only by contract; the store's own copy is
   * never handed out), the REST server's watches one view (which it serializes once).
   */
  private deliver(w: Watcher, ev: HistoryEvent, copies?: Map<string, KubeObject>): void {
    const now = w.matches(ev.obj);
    const before = ev.old ? w.matches(ev.old) : false;
    let type: WatchEvent['type'] | undefined;
    if (ev.type === 'ADDED') type = now ? 'ADDED' : undefined;
    else if (ev.type === 'DELETED') type = before || now ? 'DELETED' : undefined;
    else if (now && before) type = 'MODIFIED';
    else if (now) type = 'ADDED';
    else if (before) type = 'DELETED';
    if (!type) return;
    const v = `${apiVersionOf(w.type)}${w.view ? ' view' : ''}`;
    let obj = copies?.get(v);
    if (!obj) {
      obj = copyOut(w.type, ev.obj, w.view);
      copies?.set(v, obj);
    }
    w.send({ type, object: obj });
  }

  private *historySince(rv: number): Iterable<HistoryEvent> {
    let lo = 0;
    let hi = this.history.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.history[mid].rv <= rv) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < this.history.length; i++) yield this.history[i];
  }
}
