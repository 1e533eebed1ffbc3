/**
 * A libvirtd restart with a guest running through the node side on the embedded store.
 * QEMU outlives libvirtd, so the guest must not restart (same QEMU pid, one boot marker,
 * the console still answers); the launcher must reconnect to the new daemon (a pause and
 * unpause through the handler work afterwards, and a stop goes through); statuses
 * converge. The daemon is the shared system one: the restart window is kept short, and
 * afterAll starts it again whatever happened.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Pod } from '../../src/controllers/common/pod';
import type { EmbeddedStore } from '../../src/controllers/runtime/embedded/store';
import { VirtualMachineType } from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { onGuest } from '../../src/controllers/virt-handler/vmi-operations';
import { BOOT_MARKER, POWEROFF_MARKER, type SerialConsole } from '../support/guest';
import {
  domainExists,
  type EmbeddedNode,
  e2eRun,
  processAlive as isAlive,
  LIBVIRT_URI,
  libvirtAnswers,
  type NodeHarness,
  startEmbeddedNode,
  tinyGuestVm,
  waitFor,
} from './node-harness';

const run = e2eRun('libvirtd restart (embedded store)');

// The host's system daemon runs as root; launchers' own libvirtd (session mode) run as 107.
const libvirtdRunning = () =>
  spawnSync('pgrep', ['-x', '-u', 'root', 'libvirtd'], { stdio: 'ignore' }).status === 0;

/** Starts libvirtd if it is not running, and waits until it answers. */
async function ensureLibvirtd(): Promise<void> {
  if (!libvirtdRunning()) spawnSync('libvirtd', ['-d'], { stdio: 'ignore' });
  await waitFor('libvirtd answering', () => libvirtAnswers(), 60_000);
}

/** The pid of the domain's QEMU process, from libvirt's pid file. */
const qemuPid = (domain: string) =>
  Number(readFileSync(`/var/run/libvirt/qemu/${domain}.pid`, 'utf8').trim());

const domState = (domain: string) =>
  spawnSync('virsh', ['-c', LIBVIRT_URI, 'domstate', domain], { encoding: 'utf8' }).stdout.trim();

describe.runIf(run)('a libvirtd restart with a guest running', () => {
  const ns = 'default';
  const name = `e2e-lvd-${process.pid}`;
  const domain = `${ns}_${name}`;
  let store: EmbeddedStore;
  let embedded: EmbeddedNode | undefined;
  let node: NodeHarness;
  let console_: SerialConsole | undefined;
  let pod: Pod;
  let launcherPid = 0;
  let qemu = 0;

  beforeAll(async () => {
    embedded = await startEmbeddedNode(`node-lvd-${process.pid}`);
    ({ store, node } = embedded);
    await store.create(VirtualMachineType, tinyGuestVm(name, ns) as KubeObject);
    const vmi = await waitFor('the VMI scheduled to the node', async () => {
      const v = await node.getVmi(ns, name);
      return v.status?.nodeName === node.o.nodeName ? v : undefined;
    });
    pod = await waitFor('the launcher pod', () => node.podOf(vmi));
    launcherPid = await waitFor('the launcher process', () => node.runtime?.pidOf(pod.metadata?.uid ?? ''));
    console_ = await node.console(pod);
    await console_.waitFor(BOOT_MARKER, 180_000);
    await waitFor('VMI Running', async () => (await node.getVmi(ns, name)).status?.phase === 'Running');
    qemu = qemuPid(domain);
  }, 240_000);

  afterAll(async () => {
    // Whatever failed, the shared daemon runs again before anything is cleaned up.
    await ensureLibvirtd().catch(() => undefined);
    console_?.close();
    await embedded?.close(domain);
  }, 120_000);

  it('the guest survives, the launcher reconnects, pause/unpause work, statuses converge', async () => {
    try {
      expect(spawnSync('pkill', ['-x', '-u', 'root', 'libvirtd']).status).toBe(0);
      await waitFor('libvirtd gone', () => !libvirtdRunning(), 30_000);
    } finally {
      await ensureLibvirtd();
    }
    // The guest was not touched: the same QEMU process, the same launcher, one boot.
    expect(isAlive(qemu)).toBe(true);
    expect(qemuPid(domain)).toBe(qemu);
    expect(isAlive(launcherPid)).toBe(true);
    expect(console_?.output.split(BOOT_MARKER).length).toBe(2);
    console_?.write('\n');
    expect((await console_?.run('echo $((6*7))', 60_000))?.trim()).toBe('42');

    // The launcher reconnected: a pause through the handler reaches the new daemon.
    // It may still be reconnecting (backoff up to 2 s), so the first call is retried.
    await waitFor(
      'a pause through the handler',
      async () => {
        if (node.handler) await onGuest(node.handler, ns, name, 'pause');
        return true;
      },
      60_000,
    );
    await waitFor('the domain paused', () => domState(domain) === 'paused', 30_000);
    const paused = await waitFor('the Paused condition', async () => {
      const v = await node.getVmi(ns, name);
      return v.status?.conditions?.some((c) => c.type === 'Paused' && c.status === 'True') ? v : undefined;
    });
    expect(paused.status?.phase).toBe('Running');
    if (node.handler) await onGuest(node.handler, ns, name, 'unpause');
    await waitFor('the domain running', () => domState(domain) === 'running', 30_000);
    const resumed = await waitFor('the Paused condition gone', async () => {
      const v = await node.getVmi(ns, name);
      return v.status?.conditions?.some((c) => c.type === 'Paused') ? undefined : v;
    });
    expect(resumed.status?.phase).toBe('Running');
    expect(resumed.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Ready', status: 'True' }),
    );
    const vm = await waitFor('VM Running', async () => {
      const v = await node.getVm(ns, name);
      return v.status?.printableStatus === 'Running' ? v : undefined;
    });
    expect(vm.status?.ready).toBe(true);
    expect(qemuPid(domain)).toBe(qemu);
    expect(console_?.output.split(BOOT_MARKER).length).toBe(2);
  }, 180_000);

  it('a stop after the restart goes through: guest powered off, domain gone, VM Stopped', async () => {
    const vm = await node.getVm(ns, name);
    await store.update(VirtualMachineType, {
      ...vm,
      spec: { ...vm.spec, runStrategy: 'Halted' },
    } as KubeObject);
    await console_?.waitFor(POWEROFF_MARKER, 120_000);
    await waitFor(
      'VM Stopped',
      async () => (await node.getVm(ns, name)).status?.printableStatus === 'Stopped',
    );
    await waitFor('the launcher exited', () => !isAlive(launcherPid));
    await waitFor('the domain undefined', () => !domainExists(domain));
    expect(console_?.output.split(BOOT_MARKER).length).toBe(2);
  }, 180_000);
});
