/**
 * A real storage pool for the CSI driver's tests: a sparse XFS image (reflink=1) in a
 * temporary directory, loop-mounted by the driver's own pool-filesystem code; and the
 * leftover check every such test ends with (no mount and no loop device of the temporary
 * directory remains).
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { listLoopDevices } from '../../../src/controllers/csi-driver/loop-devices';
import {
  mountPoolFilesystem,
  unmountPoolFilesystem,
} from '../../../src/controllers/csi-driver/pool-filesystem';
import { integration } from '../../support/integration';
import { describeForeign, foreignMountsOf, unmountForeign } from './foreign-mounts';

function has(cmd: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Whether the pool tests can run here (root, losetup, mkfs.xfs); under the test command a missing one fails. */
export function poolTestsEnabled(name: string): boolean {
  const root = process.getuid?.() === 0;
  return integration(
    name,
    root && has('losetup') && has('mkfs.xfs'),
    root
      ? 'losetup or mkfs.xfs (xfsprogs) is missing: run scripts/setup-host.sh'
      : 'needs root (loop devices, mounts)',
  );
}

/** A mounted temporary pool. */
export interface TestPool {
  /** The temporary directory holding everything (image, pool mount point, test paths). */
  base: string;
  dir: string;
  image: string;
  /** Unmounts and removes everything, then fails if a mount or loop device of `base` is left. */
  cleanup(extra?: () => Promise<void>): Promise<void>;
}

/** Mounts a fresh pool of `sizeBytes` (sparse) under a new temporary directory. */
export async function makeTestPool(sizeBytes = 2 * 1024 ** 3): Promise<TestPool> {
  const base = await mkdtemp(join(tmpdir(), 'kvts-csi-'));
  const dir = join(base, 'pool');
  const image = join(base, 'pool.img');
  await mountPoolFilesystem({ dir, image, sizeBytes });
  return {
    base,
    dir,
    image,
    async cleanup(extra) {
      try {
        await extra?.();
      } finally {
        await unmountPoolFilesystem(dir).catch(() => {});
      }
      // What a failed test left is cleaned up too (the host is shared), and then reported;
      // a loop device the kernel is still clearing (see assertNothingLeft) is not left.
      const left = await withoutForeignCopies(base, await settledLeftovers(base, 5_000));
      await forceClean(left);
      await unmountPoolFilesystem(dir).catch(() => {});
      await assertNothingLeft(base);
      await rm(base, { recursive: true, force: true });
      if (left.mounts.length || left.loops.length) throw leftBehind(base, left);
    },
  };
}

/** What is under `base` once it stops shrinking for up to `ms` (async loop autoclear). */
async function settledLeftovers(base: string, ms: number): Promise<Leftovers> {
  const end = Date.now() + ms;
  let left = await leftovers(base);
  while ((left.mounts.length || left.loops.length) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 200));
    left = await leftovers(base);
  }
  return left;
}

/**
 * `left` less the loop devices that only copies of the pool's mount in other mount
 * namespaces held (see foreign-mounts.ts): those copies are unmounted where they are,
 * logged, and the devices that then clear are not the test's leftovers.
 */
async function withoutForeignCopies(base: string, left: Leftovers): Promise<Leftovers> {
  if (!left.loops.length) return left;
  const foreign = await foreignMountsOf(left.loops);
  if (!foreign.length) return left;
  process.stderr.write(
    `[pool-fixture] ${base}: ${left.loops.join(', ')} held by copies of the pool's mount in other mount namespaces: ${describeForeign(foreign)}; unmounting them there\n`,
  );
  unmountForeign(foreign);
  const after = await settledLeftovers(base, 10_000);
  return { mounts: left.mounts, loops: left.loops.filter((l) => after.loops.includes(l)) };
}

interface Leftovers {
  mounts: string[];
  loops: string[];
}

async function leftovers(base: string): Promise<Leftovers> {
  const mounts = (await readFile('/proc/self/mountinfo', 'utf8'))
    .split('\n')
    .map((l) => l.split(' ')[4])
    .filter((p): p is string => !!p && (p === base || p.startsWith(`${base}/`)));
  const loops = (await listLoopDevices()).filter((d) => d.backFile.startsWith(`${base}/`)).map((d) => d.name);
  return { mounts, loops };
}

/** Unmounts (deepest first, the pool last) and detaches what is left, a few times over (a loop device holds the pool busy). */
async function forceClean(left: { mounts: string[]; loops: string[] }): Promise<void> {
  for (let round = 0; round < 3; round++) {
    for (const m of [...left.mounts].sort((a, b) => b.length - a.length))
      try {
        execFileSync('umount', [m], { stdio: 'ignore' });
      } catch {}
    for (const l of left.loops)
      try {
        execFileSync('losetup', ['--detach', l], { stdio: 'ignore' });
      } catch {}
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Fails when a mount point or a loop device's backing file is under `base` and stays for
 * `settleMs`: the kernel clears an autoclear loop device asynchronously after its last
 * close (an unmount), so right after one it can still name its file for a moment (a full
 * run under load failed on a loop device that was on its way out).
 */
export async function assertNothingLeft(base: string, settleMs = 10_000): Promise<void> {
  const left = await withoutForeignCopies(base, await settledLeftovers(base, settleMs));
  if (left.mounts.length || left.loops.length) throw leftBehind(base, left);
}

const leftBehind = (base: string, left: { mounts: string[]; loops: string[] }) =>
  new Error(
    `left behind under ${base}: mounts ${JSON.stringify(left.mounts)}, loop devices ${JSON.stringify(left.loops)}`,
  );
