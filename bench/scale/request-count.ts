/**
 * Counts a client's requests by method and resource, and per second, so the scale
 * benchmark can tell whether a part is held back by its client's QPS limit (requests
 * per second flat at the limit) rather than by CPU.
 */
import { collectionPath } from '../../src/controllers/runtime/kube/client';
import { clientsetOf } from '../../src/controllers/runtime/kube/clientset';
import type { ObjectClient, ResourceType } from '../../src/controllers/runtime/types';

const METHODS = ['get', 'list', 'watch', 'create', 'update', 'updateStatus', 'patch', 'delete'] as const;

/** A wrapped client and its counts. */
export interface CountedClient<C extends ObjectClient> {
  client: C;
  /** Requests by `method resource`. */
  byKind: Map<string, number>;
  /** Requests completed in each second since wrapping. */
  perSecond: number[];
}

/** Wraps `client` in place (its methods), counting each call as it is made. */
export function countRequests<C extends ObjectClient>(client: C): CountedClient<C> {
  const byKind = new Map<string, number>();
  const perSecond: number[] = [];
  const t0 = performance.now();
  const c = client as unknown as Record<string, (type: ResourceType, ...rest: unknown[]) => unknown>;
  for (const m of METHODS) {
    const orig = c[m].bind(client);
    c[m] = (type: ResourceType, ...rest: unknown[]) => {
      const k = `${m} ${type.plural}`;
      byKind.set(k, (byKind.get(k) ?? 0) + 1);
      // Which client rate limit the request waited on (the kube client's, per clientset).
      const b = `clientset ${clientsetOf(collectionPath(type))}`;
      byKind.set(b, (byKind.get(b) ?? 0) + 1);
      const r = orig(type, ...rest);
      // Counted per second when done: the client's token bucket delays the start, so
      // completions show its throughput.
      void Promise.resolve(r)
        .catch((err: unknown) => {
          // Failed requests (conflicts above all) cost a token each and do nothing.
          const f = `failed${(err as { code?: number }).code ?? ''} ${k}`;
          byKind.set(f, (byKind.get(f) ?? 0) + 1);
        })
        .then(() => {
          const s = Math.floor((performance.now() - t0) / 1000);
          perSecond[s] = (perSecond[s] ?? 0) + 1;
        });
      return r;
    };
  }
  return { client, byKind, perSecond };
}

/** One line: total, the busiest second, seconds at >= 90% of `qps`, and the top kinds. */
export function requestSummary(c: CountedClient<ObjectClient>, qps: number): string {
  const secs = Array.from(c.perSecond, (n) => n ?? 0);
  const total = secs.reduce((a, b) => a + b, 0);
  const peak = Math.max(0, ...secs);
  const atLimit = secs.filter((n) => n >= 0.9 * qps).length;
  const top = [...c.byKind]
    .filter(([k]) => !isFailure(k))
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
  return `${total} requests, busiest second ${peak}, ${atLimit} s at >= 90% of qps ${qps}; ${top}`;
}

/** Counts by `method resource` (as `byKind`), plain for passing between processes. */
export type Counts = Record<string, number>;

const READS = new Set(['get', 'list', 'watch']);

/**
 * Breakdowns of requests already counted under their kind: `failed409 update ...` (the
 * failed share of a kind), `clientset kubevirt` (the requests on that clientset's limit).
 */
const isFailure = (k: string) => k.startsWith('failed') || k.startsWith('clientset ');

/** Requests per clientset rate limit (`kubevirt`, `kubernetes`, ...). */
export function byClientset(c: Counts): Counts {
  return Object.fromEntries(
    Object.entries(c)
      .filter(([k]) => k.startsWith('clientset '))
      .map(([k, n]) => [k.slice('clientset '.length), n]),
  );
}

/** `after - before`, per kind, kinds that did not change left out. */
export function diffCounts(before: Counts, after: Counts): Counts {
  const out: Counts = {};
  for (const [k, n] of Object.entries(after)) {
    const d = n - (before[k] ?? 0);
    if (d) out[k] = d;
  }
  return out;
}

/** Requests that change objects (create, update, updateStatus, patch, delete). */
export function writeTotal(c: Counts): number {
  return Object.entries(c)
    .filter(([k]) => !READS.has(k.split(' ')[0]) && !isFailure(k))
    .reduce((a, [, n]) => a + n, 0);
}

/** Requests made, failed ones included once (their `failed<code>` entries are a breakdown). */
export function requestTotal(c: Counts): number {
  return Object.entries(c)
    .filter(([k]) => !isFailure(k))
    .reduce((a, [, n]) => a + n, 0);
}

/** Every kind per VM, busiest first: `update virtualmachineinstances 2.00, ...`; `failed409 <kind>` is the part of `<kind>` that failed with 409. */
export function perVm(c: Counts, n: number): string {
  return Object.entries(c)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${(v / n).toFixed(2)}`)
    .join(', ');
}
