/**
 * The pool fixture's cleanup with a copy of the pool's mount in another mount namespace
 * (what libvirt's per-QEMU namespace made on this host, whose root mount is private): the
 * copy holds the pool's loop device after our unmount; the cleanup finds it, unmounts it
 * there and passes, where it used to fail with the loop device "left behind".
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { listLoopDevices } from '../../../src/controllers/csi-driver/loop-devices';
import { unmountPoolFilesystem } from '../../../src/controllers/csi-driver/pool-filesystem';
import { waitFor } from '../../support/wait';
import { foreignMountsOf } from './foreign-mounts';
import { makeTestPool, poolTestsEnabled } from './pool-fixture';

const enabled = poolTestsEnabled('pool cleanup with a foreign mount namespace');

describe.runIf(enabled)('a copy of the pool mount in another mount namespace', () => {
  let holder: ChildProcess | undefined;
  let cleanup: (() => Promise<void>) | undefined;
  afterAll(async () => {
    holder?.kill('SIGKILL');
    // A failure before the test's own cleanup leaves the pool mounted: clean it here.
    await cleanup?.().catch(() => {});
  });

  it('holds the loop device after our unmount; the cleanup unmounts it there and passes', async () => {
    const tp = await makeTestPool(512 * 1024 ** 2);
    cleanup = () => tp.cleanup();
    const loopsOfPool = async () =>
      (await listLoopDevices()).filter((d) => d.backFile === tp.image).map((d) => d.name);
    const [loop] = await loopsOfPool();
    expect(loop).toMatch(/^\/dev\/loop\d+$/);
    // A private copy of every mount, as `unshare -m` (and libvirt for each QEMU) makes.
    holder = spawn('unshare', ['--mount', '--propagation', 'private', 'sleep', '300'], { stdio: 'ignore' });
    const pid = holder.pid as number;
    const sleeper = await waitFor(
      'the holder in its own namespace, with the pool mounted',
      async () => {
        // unshare execs sleep in its namespace: same pid, once the namespace is its own.
        const mounts = await readFile(`/proc/${pid}/mountinfo`, 'utf8').catch(() => '');
        const cmd = await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '');
        return cmd.trim() === 'sleep' && mounts.includes(` ${tp.dir} `) ? pid : undefined;
      },
      10_000,
      50,
    );
    await unmountPoolFilesystem(tp.dir);
    // Our namespace has no mount left, yet the device stays bound: the copy holds it.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await loopsOfPool()).toEqual([loop]);
    const foreign = await foreignMountsOf([loop as string]);
    expect(foreign.map((f) => [f.pid, f.mountPoint])).toContainEqual([sleeper, tp.dir]);
    cleanup = undefined;
    await tp.cleanup();
    expect(await loopsOfPool()).toEqual([]);
    expect(await readFile(`/proc/${sleeper}/mountinfo`, 'utf8')).not.toContain(` ${tp.dir} `);
  }, 60_000);
});
