/**
 * Records core/v1 Events about objects, as `kubectl describe` shows them. Repeats of the
 * same (object, type, reason, message) are folded into one Event whose `count` grows.
 * Writing is fire-and-forget: a failed write is reported, never thrown at the caller.
 */
import { isNotFound } from './errors';
import { EventType } from './resources';
import { runtimeWarn } from './runtime-log';
import type { KubeObject, ObjectClient } from './types';

export type EventKind = 'Normal' | 'Warning';

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

export class EventRecorder {
  private readonly folded = new Map<string, Folded>();
  private pending = new Set<Promise<void>>();

  constructor(
    private readonly client: ObjectClient,
    private readonly source: EventSource,
    private readonly onError: (err: Error) => void = (e) => runtimeWarn(`event recorder: ${e.message}`),
  ) {}

  /** Records an event about `obj` (which needs kind, name and, when namespaced, namespace). */
  event(obj: KubeObject, type: EventKind, reason: string, message: string): void {
    const p = this.write(obj, type, reason, message.slice(0, MAX_MESSAGE)).catch((e) => this.onError(e));
    this.pending.add(p);
    void p.finally(() => this.pending.delete(p));
  }

  /** Waits for every event write started so far. */
  async flush(): Promise<void> {
    await Promise.all([...this.pending]);
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
