/**
 * The launcher's GuestPing (virt-probe's guestAgentPing) on the fake driver over the real
 * gRPC socket: it fails while the guest has no agent, passes once one answers, passes
 * while the guest is paused by the user (upstream suppresses that failure: stopped vCPUs
 * cannot answer), and refuses a request for another domain. Exec needs a guest agent that
 * runs commands: the libvirt driver's, proven with the real guest in test/e2e/probes-local.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FakeDriver } from '../../../src/drivers';
import { type FakeLauncher, fakeLauncherVmi, startFakeLauncher } from './fake-launcher';

const ref = { namespace: 'ns1', name: 'vm1' };

describe('VirtLauncher probes (fake driver)', () => {
  let fake: FakeLauncher;
  beforeEach(async () => {
    fake = await startFakeLauncher({ dirPrefix: 'kvts-launcher-probes-' });
  });
  afterEach(async () => {
    await fake.close();
  });

  it('GuestPing follows the agent, passes while paused by the user, and names its domain', async () => {
    await fake.client.syncVirtualMachine(fakeLauncherVmi());
    const err = await fake.client.guestPing('ns1_vm1', 1).catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/^GuestPing: .*guest agent is not connected/i);
    new FakeDriver({ host: fake.host }).guestAgent.connect(ref);
    await fake.client.guestPing('ns1_vm1', 1);
    await fake.client.pauseVirtualMachine(fakeLauncherVmi());
    await fake.client.guestPing('ns1_vm1', 1);
    const other = await fake.client.guestPing('ns1_vm2', 1).catch((e: unknown) => e);
    expect((other as Error).message).toBe(
      'GuestPing: domainName "ns1_vm2": this launcher runs domain ns1_vm1',
    );
  });
});
