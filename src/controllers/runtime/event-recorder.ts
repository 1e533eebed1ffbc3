/**
 * Records core/v1 Events about objects, as `kubectl describe` shows them. Repeats of the
 * same (object, type, reason, message) are folded into one Event whose `count` grows.
 * Writing is fire-and-forget: a failed write is reported, never thrown at the caller.
 * As client-go's broadcaster (queue of 1,000, DropIfChannelFull, one sink writing at a
 * time), events are written one at a time from a bounded queue, and dropped when it is
 * full: under load they take a share of the client's QPS instead of queueing ahead of
 * the controller's own writes.
 */
import { isNotFound } from './errors';
import { EventType } from './resources';
import { runtimeWarn } from './runtime-log';
import type { KubeObject, ObjectClient } from './types';

/** An Event's `type`: Normal, or Warning for something a user should look at. */
export type EventKind = 'Normal' | 'Warning';

/** Who reports the events: the Event's `source` (and `reportingComponent`/`reportingInstance`). */
export interface EventSource {
  /** Reporting component, e.g. `virt-controller`. */
  component: string;
  /** Reporting instance (pod or host name). */
  host?: string;
}

interface Folded {
  name: string;
  namespace: string;
  count: number;
}

const MAX_MESSAGE = 1024;
const MAX_FOLDED = 4096;
/** Events waiting to be written (client-go's maxQueuedEvents). */
export const MAX_QUEUED_EVENTS = 1000;

interface Queued {
  obj: KubeObject;
  type: EventKind;
  reason: string;
  message: string;
}

/**
 * Writes core/v1 Events about objects from a bounded queue, one at a time, folding repeats
 * into a growing `count`; `event()` never throws or waits (see the file comment).
 */
export class EventRecorder {
  private readonly folded = new Map<string, Folded>();
  private readonly queue: Queued[] = [];
  private draining?: Promise<void>;
  /** Events dropped because the queue was full. */
  dropped = 0;

  constructor(
    private readonly client: ObjectClient,
    private readonly source: EventSource,
    private readonly onError: (err: Error) => void = (e) => runtimeWarn(`event recorder: ${e.message}`),
  ) {}

  /** Records an event about `obj` (which needs kind, name and, when namespaced, namespace). */
  event(obj: KubeObject, type: EventKind, reason: string, message: string): void {
    if (this.queue.length >= MAX_QUEUED_EVENTS) {
      if (this.dropped++ % MAX_QUEUED_EVENTS === 0)
        this.onError(new Error(`event queue full (${MAX_QUEUED_EVENTS}): ${this.dropped} dropped so far`));
      return;
    }
    this.queue.push({ obj, type, reason, message: message.slice(0, MAX_MESSAGE) });
    this.draining ??= this.drain();
  }

  /** Waits until every event recorded so far is written (or has failed). */
  async flush(): Promise<void> {
    while (this.draining) await this.draining;
  }

  private async drain(): Promise<void> {
    for (let e = this.queue.shift(); e; e = this.queue.shift()) {
      await this.write(e.obj, e.type, e.reason, e.message).catch((err) => this.onError(err));
    }
    this.draining = undefined;
  }

  private async write(obj: KubeObject, type: EventKind, reason: string, message: string): Promise<void> {
    const m = obj.metadata ?? {};
    const namespace = m.namespace || 'default';
    const key = `${m.uid ?? `${namespace}/${m.name}`}|${type}|${reason}|${message}`;
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    const seen = this.folded.get(key);
    if (seen) {
      seen.count++;
      try {
        await this.client.patch(
          EventType,
          seen.name,
          { count: seen.count, lastTimestamp: now },
          { namespace, type: 'merge' },
        );
        return;
      } catch (err) {
        if (!isNotFound(err)) throw err;
        this.folded.delete(key); // expired on the server: start a new Event
      }
    }
    const name = `${m.name}.${(BigInt(Date.now()) * 1_000_000n + BigInt(Math.floor(Math.random() * 1e6))).toString(16)}`;
    await this.client.create(EventType, {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace },
      involvedObject: {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        name: m.name,
        namespace: m.namespace,
        uid: m.uid,
        resourceVersion: m.resourceVersion,
      },
      type,
      reason,
      message,
      source: { component: this.source.component, host: this.source.host },
      reportingComponent: this.source.component,
      reportingInstance: this.source.host ?? '',
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
    } as KubeObject);
    if (this.folded.size >= MAX_FOLDED) this.folded.delete(this.folded.keys().next().value!);
    this.folded.set(key, { name, namespace, count: 1 });
  }
}
