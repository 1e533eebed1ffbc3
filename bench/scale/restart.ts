/**
 * The restart measurement of the scale benchmark: with every VM Running and the
 * controller done with its queue (no request for a while), virt-controller is stopped and
 * a fresh one started; it relists everything and
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

/**
 * Waits until `part`'s counts have not moved for `quietMs` (or `maxMs` passed); returns
 * them and when they last moved.
 */
export async function untilQuiet(
  part: Part,
  quietMs: number,
  maxMs: number,
): Promise<{ counts: Counts; changedAt: number }> {
  const t0 = performance.now();
  // A part too busy to answer within its timeout is not quiet: ask again (the 10,000-VM
  // apiserver run of 2026-12-05 ended here when virt-controller, finishing its last VMs on
  // a saturated host, did not answer for 10 s).
  const counts = async (): Promise<Counts | undefined> => requestCounts(part).catch(() => undefined);
  let last = (await counts()) ?? {};
  let changedAt = t0;
  while (performance.now() - changedAt < quietMs && performance.now() - t0 < maxMs) {
    await new Promise((r) => setTimeout(r, 1000));
    const c = await counts();
    if (!c) {
      changedAt = performance.now();
      continue;
    }
    if (Object.keys(diffCounts(last, c)).length) {
      last = c;
      changedAt = performance.now();
    }
  }
  return { counts: last, changedAt };
}

/**
 * Waits for `old` to finish what it has queued (quiet for `quietMs`), then replaces it
 * with `start()` and waits for that one to be quiet too.
 */
export async function restartController(
  old: Part,
  start: () => Promise<Part>,
  vmiWrites: () => Promise<number>,
  quietMs = 10_000,
  maxMs = 300_000,
): Promise<RestartResult & { settleSeconds: number }> {
  const s0 = performance.now();
  const settled = await untilQuiet(old, quietMs, maxMs);
  const settleSeconds = (settled.changedAt - s0) / 1000;
  const w0 = await vmiWrites();
  await stopPart(old);
  const t0 = performance.now();
  const part = await start();
  const { counts: last, changedAt: changed } = await untilQuiet(part, quietMs, maxMs);
  const withoutLeases = Object.fromEntries(Object.entries(last).filter(([k]) => !k.endsWith(' leases')));
  return {
    settleSeconds,
    part,
    resyncSeconds: (changed - t0) / 1000,
    counts: last,
    writes: writeTotal(withoutLeases),
    vmiWrites: (await vmiWrites()) - w0,
  };
}
