/**
 * A lock between test files running at once in different worker processes, for host
 * resources only one may use at a time (e.g. the CSI driver's one name registered with the
 * kubelet). A directory under /tmp holds the owner's pid; a lock whose owner died is taken
 * over, so a crashed run never blocks the next.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Waits for the lock `name` (up to `timeoutMs`); resolves to its release. */
export async function acquireHostLock(name: string, timeoutMs: number): Promise<() => void> {
  const dir = `/tmp/kvts-test-${name}.lock`;
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      mkdirSync(dir);
      writeFileSync(join(dir, 'pid'), String(process.pid));
      return () => rmSync(dir, { recursive: true, force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    let owner = Number.NaN;
    try {
      owner = Number(readFileSync(join(dir, 'pid'), 'utf8'));
    } catch {}
    // No pid yet: the owner is between mkdir and write; wait, do not take it.
    if (Number.isInteger(owner) && owner > 0 && !alive(owner)) rmSync(dir, { recursive: true, force: true });
    if (Date.now() > end)
      throw new Error(`host lock ${name}: still held by pid ${owner} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * The shared cluster's host locks, taken in this order (one order everywhere: no deadlock):
 * - `cluster-components`: the files that install the components on the shared cluster and
 *   remove them (CRDs included) at their end: vm-tiny, vm-snapshot, datavolume-vm. One's
 *   removal would take the others' controllers and VMs away mid-test.
 * - `csi-driver`: the files that run the CSI driver in their own process under its one
 *   name (one registration per kubelet) and install/delete the snapshot CRDs.
 */
export const HOST_LOCK_ORDER = ['cluster-components', 'csi-driver'] as const;

/** Takes `names` in `order`; resolves to one release of them all (in reverse). */
export async function acquireHostLocks(
  names: ReadonlyArray<string>,
  timeoutMs: number,
  order: ReadonlyArray<string> = HOST_LOCK_ORDER,
): Promise<() => void> {
  const unknown = names.filter((n) => !order.includes(n));
  if (unknown.length) throw new Error(`host locks ${unknown.join(', ')}: not in the lock order`);
  const releases: Array<() => void> = [];
  const releaseAll = () => {
    for (const r of releases.splice(0).reverse()) r();
  };
  try {
    for (const name of order.filter((n) => names.includes(n)))
      releases.push(await acquireHostLock(name, timeoutMs));
  } catch (e) {
    releaseAll();
    throw e;
  }
  return releaseAll;
}
