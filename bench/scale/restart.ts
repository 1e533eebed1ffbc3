/**
 * The restart measurement of the scale benchmark: with every VM Running and settled,
 * virt-controller is stopped and a fresh one started; it relists everything and
 * reconciles every object, and should find nothing to change. Counted at its client
 * (its writes, by kind, until it has been quiet for a while) and at the API (VMI writes by
 * any client over the same window).
 */

import { type Part, requestCounts, stopPart } from './proc';
import { type Counts, diffCounts, writeTotal } from './request-count';

export interface RestartResult {
  /** The new controller, running. */
  part: Part;
  /** From the old one's stop to the new one's last request. */
  resyncSeconds: number;
  /** The new controller's requests by kind until quiet. */
  counts: Counts;
  /** Of those, the writes; Lease writes (leader election) left out, they change the Lease. */
  writes: number;
  /** VMI writes at the API over the window, any client. */
  vmiWrites: number;
}

/** Until the controller's counts have not moved for `quietMs` (or `maxMs` passed). */
export async function restartController(
  old: Part,
  start: () => Promise<Part>,
  vmiWrites: () => Promise<number>,
  quietMs = 10_000,
  maxMs = 300_000,
): Promise<RestartResult> {
  const w0 = await vmiWrites();
  await stopPart(old);
  const t0 = performance.now();
  const part = await start();
  let last = await requestCounts(part);
  let changed = performance.now();
  while (performance.now() - changed < quietMs && performance.now() - t0 < maxMs) {
    await new Promise((r) => setTimeout(r, 1000));
    const c = await requestCounts(part);
    if (Object.keys(diffCounts(last, c)).length) {
      last = c;
      changed = performance.now();
    }
  }
  const withoutLeases = Object.fromEntries(Object.entries(last).filter(([k]) => !k.endsWith(' leases')));
  return {
    part,
    resyncSeconds: (changed - t0) / 1000,
    counts: last,
    writes: writeTotal(withoutLeases),
    vmiWrites: (await vmiWrites()) - w0,
  };
}
