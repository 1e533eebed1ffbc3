/**
 * The Manager runs controllers: it starts the shared informers, waits for their caches,
 * optionally wins leader election on a Lease before starting workers (and stops them when
 * leadership is lost), hands out event recorders, and shuts everything down gracefully:
 * no new keys, in-flight reconciles finish, informers stop, the Lease is released.
 */
import os from 'node:os';
import { Controller, type ControllerOptions } from './controller';
import { EventRecorder } from './event-recorder';
import { type InformerOptions, SharedInformerFactory } from './informer';
import { type LeaderElectionOptions, LeaderElector } from './leader-election';
import type { ObjectClient } from './types';
import type { WorkQueueMetricsSink } from './workqueue';

/** The Manager's client, namespace, optional leader election, and informer and metrics settings. */
export interface ManagerOptions {
  client: ObjectClient;
  /** Watch only this namespace (default: all). */
  namespace?: string;
  /** Run controllers only while holding this Lease. */
  leaderElection?: Omit<LeaderElectionOptions, 'identity'> & { identity?: string };
  /** Informer settings shared by all controllers. */
  informers?: Omit<InformerOptions, 'namespace' | 'labelSelector' | 'fieldSelector'>;
  /** Called when leadership is lost after being held (default: the manager stops). */
  onLostLeadership?: () => void;
  /** A metrics sink for each controller's work queue, by controller name. */
  queueMetrics?: (controller: string) => WorkQueueMetricsSink;
}

/**
 * Runs controllers on shared informers: starts the informers, waits for their caches,
 * starts the workers (after winning the Lease when leader election is on) and shuts down
 * gracefully (`stop`).
 */
export class Manager {
  readonly client: ObjectClient;
  readonly informers: SharedInformerFactory;
  readonly elector?: LeaderElector;
  private readonly controllers: Controller[] = [];
  private readonly recorders: EventRecorder[] = [];
  private readonly abort = new AbortController();
  private running?: Promise<void>;
  private workersStarted = false;
  private cachesSynced = false;

  constructor(private readonly options: ManagerOptions) {
    this.client = options.client;
    this.informers = new SharedInformerFactory(options.client, {
      ...options.informers,
      namespace: options.namespace,
    });
    if (options.leaderElection) {
      this.elector = new LeaderElector(options.client, {
        identity: `${os.hostname()}_${process.pid}_${Math.random().toString(36).slice(2, 8)}`,
        ...options.leaderElection,
      });
    }
  }

  /** Adds a controller; add them all before `start`. */
  addController(options: ControllerOptions): Controller {
    if (this.running)
      throw new Error(`manager already started: add controller "${options.name}" before start()`);
    const c = new Controller(
      {
        namespace: this.options.namespace,
        queueMetrics: this.options.queueMetrics?.(options.name),
        ...options,
      },
      this.informers,
    );
    this.controllers.push(c);
    return c;
  }

  /** An event recorder writing core/v1 Events as `component`. */
  eventRecorder(component: string): EventRecorder {
    const r = new EventRecorder(this.client, { component, host: os.hostname() });
    this.recorders.push(r);
    return r;
  }

  /** The controllers added, in order (their names and work queues, for metrics). */
  get controllerList(): readonly Controller[] {
    return this.controllers;
  }

  /** True once the informers' caches have synced (ready to take the lead). */
  isReady(): boolean {
    return this.cachesSynced && !this.abort.signal.aborted;
  }

  /** True while workers run (always true without leader election once started). */
  isLeader(): boolean {
    return this.workersStarted;
  }

  /**
   * Starts informers and waits for their caches; then (after winning the Lease, if leader
   * election is on) starts the workers. Resolves once workers run, or once stopped.
   */
  async start(): Promise<void> {
    if (this.running) return;
    this.informers.start();
    await this.informers.waitForCacheSync();
    if (this.abort.signal.aborted) return;
    this.cachesSynced = true;
    if (!this.elector) {
      this.startWorkers();
      this.running = Promise.resolve();
      return;
    }
    const won = await this.elector.acquire(this.abort.signal);
    if (!won) return;
    this.startWorkers();
    this.running = this.elector.renewLoop(this.abort.signal).then(async () => {
      if (this.abort.signal.aborted) return;
      // Leadership lost: stop reconciling at once, another replica takes over.
      await Promise.all(this.controllers.map((c) => c.stop()));
      this.workersStarted = false;
      (this.options.onLostLeadership ?? (() => void this.stop()))();
    });
  }

  /** Graceful shutdown: workers drain, informers stop, events flush, the Lease is released. */
  async stop(): Promise<void> {
    this.abort.abort();
    await Promise.all(this.controllers.map((c) => c.stop()));
    this.workersStarted = false;
    await this.informers.shutdown();
    await Promise.all(this.recorders.map((r) => r.flush()));
    await this.elector?.release();
    await this.running;
  }

  private startWorkers(): void {
    this.workersStarted = true;
    for (const c of this.controllers) c.startWorkers();
  }
}
