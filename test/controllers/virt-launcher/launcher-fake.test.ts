/**
 * virt-launcher against the fake driver, over its real unix-socket gRPC server: sync
 * starts the domain once, events reach the notify pipe, pause/unpause, a guest that
 * powered off is never started again, DeleteVirtualMachine ends the process, SIGTERM-style
 * stop shuts the guest down gracefully, and a VMI that is not the launcher's is refused.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DomainEventNotification, LauncherClient } from '../../../src/controllers/launcher-protocol';
import type { LauncherDomain } from '../../../src/controllers/launcher-protocol/domain-report';
import type { VirtLauncher } from '../../../src/controllers/virt-launcher/launcher';
import { type DomainRef, FakeDriver, FakeHost, type SoftRebootOptions } from '../../../src/drivers';
import { type FakeLauncher, fakeLauncherVmi, startFakeLauncher } from './fake-launcher';

const vmi = (uid = 'uid-1') => fakeLauncherVmi({ uid });

async function until<T>(
  what: string,
  fn: () => T | undefined | false | Promise<T | undefined | false>,
): Promise<T> {
  const end = Date.now() + 10_000;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('VirtLauncher on the fake driver', () => {
  let fake: FakeLauncher;
  let dir: string;
  let host: FakeHost;
  let launcher: VirtLauncher;
  let client: LauncherClient;
  let events: DomainEventNotification[];

  beforeEach(async () => {
    fake = await startFakeLauncher({ notify: true, launcher: { finalWaitMs: 60_000 } });
    ({ dir, host, launcher, client, events } = fake);
  });

  afterEach(async () => {
    await fake.close();
  });

  const domain = () => fake.domain();

  it('serves launcher-sock with mode 0600 and answers Info and Ping', async () => {
    expect(statSync(join(dir, 'launcher-sock')).mode & 0o777).toBe(0o600);
    expect((await client.getInfo()).supportedCmdVersions).toEqual(['v1']);
    await client.ping();
    expect(await client.getDomain()).toBeUndefined();
  });

  it('syncs the VMI into a running domain once and reports it to the notify pipe', async () => {
    await client.syncVirtualMachine(vmi());
    const d = await domain();
    expect(d).toMatchObject({ name: 'ns1_vm1', state: 'running', vmiUid: 'uid-1', finished: false });
    const boot = d!.bootId;
    expect(boot).not.toBe('');
    await client.syncVirtualMachine(vmi());
    expect((await domain())!.bootId).toBe(boot);
    const ev = await until('a running notification', () =>
      events.find((e) => (e.domain as LauncherDomain | null)?.state === 'running'),
    );
    expect(ev.eventType).toMatch(/ADDED|MODIFIED/);
  });

  it('pauses and unpauses', async () => {
    await client.syncVirtualMachine(vmi());
    await client.pauseVirtualMachine(vmi());
    expect((await domain())!.state).toBe('paused');
    await client.unpauseVirtualMachine(vmi());
    expect((await domain())!.state).toBe('running');
  });

  it('never restarts a guest that shut down, and exits on DeleteVirtualMachine', async () => {
    await client.syncVirtualMachine(vmi());
    await client.shutdownVirtualMachine(vmi(), 5);
    const off = await until('the domain finished', async () => {
      const d = await domain();
      return d?.finished ? d : undefined;
    });
    expect(off.state).toBe('shutoff');
    await until('a shutoff notification', () =>
      events.some((e) => (e.domain as LauncherDomain | null)?.state === 'shutoff'),
    );
    await client.syncVirtualMachine(vmi());
    expect((await domain())!.state).toBe('shutoff');
    expect(host.domains.get('ns1_vm1')?.boots).toBe(1);
    await client.deleteVirtualMachine(vmi());
    expect(await launcher.exited).toBe(0);
    expect(host.domains.has('ns1_vm1')).toBe(false);
  });

  it('stop() shuts the guest down and forgets it', async () => {
    await client.syncVirtualMachine(vmi());
    expect(await launcher.stop(5)).toBe(0);
    expect(host.domains.has('ns1_vm1')).toBe(false);
  });

  it("soft reboot goes through the guest agent when the VMI says it is connected, else ACPI (upstream's)", async () => {
    await client.syncVirtualMachine(vmi());
    await client.softRebootVirtualMachine(vmi());
    const withAgent = vmi();
    withAgent.status = { conditions: [{ type: 'AgentConnected', status: 'True' }] };
    await client.softRebootVirtualMachine(withAgent);
    expect(host.domains.get('ns1_vm1')?.softReboots).toEqual(['acpi', 'agent']);
    const noAcpi = vmi();
    noAcpi.spec.domain.features = { acpi: { enabled: false } };
    await expect(client.softRebootVirtualMachine(noAcpi)).rejects.toThrow(
      'VMI neither have the agent connected nor the ACPI feature enabled',
    );
  });

  it('an agent that fails the soft reboot is followed by ACPI', async () => {
    const h = new FakeHost();
    class AgentCannotReboot extends FakeDriver {
      override async softReboot(ref: DomainRef, o?: SoftRebootOptions): Promise<void> {
        if (o?.via === 'agent')
          throw new Error('agent: guest-shutdown: child process has failed to shutdown');
        return super.softReboot(ref, o);
      }
    }
    const l = await startFakeLauncher({ host: h, driver: () => new AgentCannotReboot({ host: h }) });
    try {
      await l.client.syncVirtualMachine(vmi());
      const withAgent = vmi();
      withAgent.status = { conditions: [{ type: 'AgentConnected', status: 'True' }] };
      await l.client.softRebootVirtualMachine(withAgent);
      expect(h.domains.get('ns1_vm1')?.softReboots).toEqual(['acpi']);
    } finally {
      await l.close();
    }
  });

  describe('with a guest that ignores ACPI (the pod grace period is 5 s)', () => {
    let stubborn: FakeLauncher;
    beforeEach(async () => {
      const h = new FakeHost();
      stubborn = await startFakeLauncher({
        host: h,
        driver: () => new FakeDriver({ host: h, guestHonoursShutdown: false }),
      });
      await stubborn.client.syncVirtualMachine(vmi());
    });
    afterEach(() => stubborn.close());
    const downWithin = async (ms: number) => {
      const t0 = Date.now();
      for (;;) {
        const d = await stubborn.domain();
        if (d?.state === 'shutoff') return Date.now() - t0;
        if (Date.now() - t0 > ms) throw new Error(`still ${d?.state} after ${ms} ms`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };

    it('a grace period of 0 kills the guest at once (not the 5 s of the pod)', async () => {
      await stubborn.client.shutdownVirtualMachine(vmi(), 0);
      expect(await downWithin(1_500)).toBeLessThan(1_500);
    });

    it('a VMI whose own grace period is 0 is killed at once when the request has none', async () => {
      const v = vmi();
      v.spec.terminationGracePeriodSeconds = 0;
      await stubborn.launcher.shutdownVirtualMachine({
        vmi: { vmiJson: Buffer.from(JSON.stringify(v)) },
      } as never);
      expect(await downWithin(1_500)).toBeLessThan(1_500);
    });

    it('a shorter grace period during a shutdown brings the kill forward', async () => {
      await stubborn.client.shutdownVirtualMachine(vmi(), 30);
      await new Promise((r) => setTimeout(r, 200));
      expect((await stubborn.domain())?.state).toBe('running');
      await stubborn.client.shutdownVirtualMachine(vmi(), 0);
      expect(await downWithin(1_500)).toBeLessThan(1_500);
    });

    it('a SIGTERM stop in progress is shortened by a later grace period of 0', async () => {
      const stopped = stubborn.launcher.stop(30);
      await new Promise((r) => setTimeout(r, 200));
      const t0 = Date.now();
      await stubborn.client.shutdownVirtualMachine(vmi(), 0);
      expect(await stopped).toBe(0);
      expect(Date.now() - t0).toBeLessThan(1_500);
    });
  });

  it('refuses a VMI that is not its own, naming both', async () => {
    await expect(client.syncVirtualMachine(vmi('other-uid'))).rejects.toThrow(
      /ns1\/vm1 \(uid other-uid\) is not the one this launcher runs \(ns1\/vm1, uid uid-1\)/,
    );
    expect(host.domains.size).toBe(0);
  });

  it('reports driver failures as the command error', async () => {
    await expect(client.pauseVirtualMachine(vmi())).rejects.toThrow(/PauseVirtualMachine: .*ns1_vm1/);
  });
});
