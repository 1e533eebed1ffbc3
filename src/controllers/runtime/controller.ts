/**
 * A controller: informer events turned into keys on a rate-limited work queue, and N
 * workers calling the Reconciler for them. Events on the primary kind enqueue the object;
 * events on owned kinds enqueue their controller owner; `watches` map any object to keys.
 */
import type { Informer, SharedInformerFactory } from './informer';
import type { RateLimiter } from './rate-limiter';
import type { Reconciler, Request } from './reconciler';
import { apiVersionOf, objectKey, splitKey } from './resources';
import { runtimeError } from './runtime-log';
import type { KubeObject, ResourceType } from './types';
import { WorkQueue, type WorkQueueMetricsSink } from './workqueue';

/** What a controller reconciles, what else enqueues its keys, and its workers and queue. */
export interface ControllerOptions {
  /** Name used in logs and events. */
  name: string;
  /** The primary kind: each of its objects is reconciled under its own key. */
  forType: ResourceType;
  reconciler: Reconciler;
  /** Concurrent workers (default 1); one key is never reconciled by two at once. */
  workers?: number;
  /** Kinds whose objects name a `forType` object as controller owner: changes enqueue the owner. */
  owns?: ResourceType[];
  /** Other kinds, mapped to the requests they affect. */
  watches?: { type: ResourceType; map: (obj: KubeObject) => Request[] }[];
  /** Only objects in this namespace (default: the manager's). */
  namespace?: string;
  /** Only primary objects matching this label selector. */
  labelSelector?: string;
  rateLimiter?: RateLimiter<string>;
  /** Where the work queue reports adds, retries and durations (metrics). */
  queueMetrics?: WorkQueueMetricsSink;
  /** Called when a reconcile throws (default: the runtime log, see runtime-log.ts). */
  onError?: (request: Request, err: Error) => void;
}

/** Counters, for tests and metrics. */
export interface ControllerStats {
  reconciles: number;
  errors: number;
}

/**
 * Informer events turned into keys on a rate-limited work queue, and workers calling the
 * Reconciler for each key: an error or `requeue` retries with backoff, `requeueAfterMs`
 * re-adds later. Made by `Manager.addController`, which starts it.
 */
export class Controller {
  readonly queue: WorkQueue<string>;
  readonly stats: ControllerStats = { reconciles: 0, errors: 0 };
  readonly informer: Informer<KubeObject>;
  private workers: Promise<void>[] = [];
  private abort = new AbortController();

  constructor(
    readonly options: ControllerOptions,
    informers: SharedInformerFactory,
  ) {
    this.queue = new WorkQueue<string>({ rateLimiter: options.rateLimiter, metrics: options.queueMetrics });
    const ns = options.namespace;
    this.informer = informers.informerFor(options.forType, {
      namespace: ns,
      labelSelector: options.labelSelector,
    });
    const enqueue = (o: KubeObject) => this.queue.add(objectKey(o));
    this.informer.addEventHandler({
      onAdd: enqueue,
      onUpdate: (_old, o) => enqueue(o),
      onDelete: enqueue,
    });
    const forApiVersion = apiVersionOf(options.forType);
    for (const owned of options.owns ?? []) {
      const toOwner = (o: KubeObject) => {
        const ref = o.metadata?.ownerReferences?.find((r) => r.controller);
        if (
          !ref ||
          ref.kind !== options.forType.kind ||
          ref.apiVersion.split('/')[0] !== forApiVersion.split('/')[0]
        )
          return;
        this.queue.add(options.forType.namespaced ? `${o.metadata?.namespace}/${ref.name}` : ref.name);
      };
      informers.informerFor(owned, { namespace: ns }).addEventHandler({
        onAdd: toOwner,
        onUpdate: (old, o) => {
          toOwner(old);
          toOwner(o);
        },
        onDelete: toOwner,
      });
    }
    for (const w of options.watches ?? []) {
      const map = (o: KubeObject) => {
        for (const r of w.map(o)) this.queue.add(r.namespace ? `${r.namespace}/${r.name}` : r.name);
      };
      informers.informerFor(w.type, { namespace: ns }).addEventHandler({
        onAdd: map,
        onUpdate: (_old, o) => map(o),
        onDelete: map,
      });
    }
  }

  get name(): string {
    return this.options.name;
  }

  /** Starts the workers (the informers must be started by the manager). */
  startWorkers(): void {
    this.abort = new AbortController();
    const n = Math.max(1, this.options.workers ?? 1);
    for (let i = 0; i < n; i++) this.workers.push(this.work());
  }

  /** Stops handing out keys and waits for in-flight reconciles to finish. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.queue.shutDownWithDrain();
    await Promise.all(this.workers);
    this.workers = [];
  }

  private async work(): Promise<void> {
    const signal = this.abort.signal;
    for (;;) {
      const key = await this.queue.get();
      if (key === undefined) return;
      const req = splitKey(key);
      try {
        this.stats.reconciles++;
        const res = await this.options.reconciler.reconcile(req, { signal, controller: this.options.name });
        if (res?.requeueAfterMs !== undefined) {
          this.queue.forget(key);
          this.queue.addAfter(key, res.requeueAfterMs);
        } else if (res?.requeue) this.queue.addRateLimited(key);
        else this.queue.forget(key);
      } catch (err) {
        this.stats.errors++;
        (
          this.options.onError ??
          ((r, e) =>
            runtimeError(
              `controller ${this.options.name}: reconcile ${r.namespace ?? ''}/${r.name}: ${e.message}`,
            ))
        )(req, err as Error);
        this.queue.addRateLimited(key);
      } finally {
        this.queue.done(key);
      }
    }
  }
}
