/**
 * virt-launcher's guest agent on the fake driver, over the real gRPC socket: the domain
 * report carries the agent's connection state and what it reports, the change reaches the
 * notify pipe, and GetGuestInfo answers upstream's VirtualMachineInstanceGuestAgentInfo.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DomainEventNotification, LauncherClient } from '../../../src/controllers/launcher-protocol';
import type { LauncherDomain } from '../../../src/controllers/launcher-protocol/domain-report';
import { toGuestAgentInfo } from '../../../src/controllers/launcher-protocol/guest-agent-report';
import { FakeDriver, type FakeHost, fakeGuestInfo } from '../../../src/drivers';
import { waitFor } from '../../support/wait';
import { type FakeLauncher, fakeLauncherVmi, startFakeLauncher } from './fake-launcher';

const ref = { namespace: 'ns1', name: 'vm1' };
const vmi = fakeLauncherVmi();

describe('VirtLauncher guest agent (fake driver)', () => {
  let fake: FakeLauncher;
  let host: FakeHost;
  let client: LauncherClient;
  let events: DomainEventNotification[];

  beforeEach(async () => {
    fake = await startFakeLauncher({
      notify: true,
      dirPrefix: 'kvts-launcher-ga-',
      launcher: { agentPollMs: 20, agentConnectPollMs: 20 },
    });
    ({ host, client, events } = fake);
  });

  afterEach(async () => {
    await fake.close();
  });

  const domain = () => fake.domain();
  const lastEvent = () => events.at(-1)?.domain as LauncherDomain | undefined;

  it('reports no agent until one connects, then its OS, hostname and interfaces; GetGuestInfo answers', async () => {
    await client.syncVirtualMachine(vmi);
    await waitFor(
      'agent reported disconnected',
      async () => (await domain())?.guestAgent?.connected === false,
    );
    expect(await client.getGuestInfo()).toBeUndefined();

    const info = fakeGuestInfo(ref, {
      hostname: 'guest-1',
      users: [{ name: 'root', loginTime: 1700000000.25 }],
      filesystems: [
        {
          name: 'vda1',
          mountPoint: '/',
          type: 'ext4',
          usedBytes: 5,
          totalBytes: 10,
          disks: [{ busType: 'virtio' }],
        },
      ],
    });
    new FakeDriver({ host }).guestAgent.connect(ref, info);

    const d = await waitFor('agent reported connected', async () => {
      const x = await domain();
      return x?.guestAgent?.connected ? x : undefined;
    });
    expect(d.guestAgent).toEqual({
      connected: true,
      os: info.os,
      hostname: 'guest-1',
      interfaces: info.interfaces,
    });
    // The change went to the node agent's notify pipe too.
    await waitFor('notify event with the agent', () => lastEvent()?.guestAgent?.connected === true);

    expect(await client.getGuestInfo()).toEqual({
      guestAgentVersion: '7.2.0',
      hostname: 'guest-1',
      os: info.os,
      timezone: 'UTC, 0',
      supportedCommands: info.supportedCommands,
      userList: [{ userName: 'root', loginTime: 1700000000.25 }],
      fsInfo: {
        disks: [
          {
            diskName: 'vda1',
            mountPoint: '/',
            fileSystemType: 'ext4',
            usedBytes: 5,
            totalBytes: 10,
            disk: [{ busType: 'virtio' }],
          },
        ],
      },
    });

    new FakeDriver({ host }).guestAgent.disconnect(ref);
    await waitFor('agent reported disconnected again', () => lastEvent()?.guestAgent?.connected === false);
    expect((await domain())?.guestAgent).toEqual({ connected: false });
  });

  it('caps users and filesystems at 10, as upstream', () => {
    const many = Array.from({ length: 12 }, (_, i) => ({ name: `u${i}` }));
    const out = toGuestAgentInfo({ agentVersion: '1', users: many, filesystems: [] });
    expect(out.userList).toHaveLength(10);
    expect(out.fsInfo).toEqual({ disks: [] });
    expect(out.timezone).toBe('');
  });
});

describe('VirtLauncher guest agent events (fake driver)', () => {
  it('reads the agent when the driver reports its channel, without waiting for the backstop poll', async () => {
    // A backstop far beyond the test's timeout: only the agent event can bring the report.
    const fake = await startFakeLauncher({
      dirPrefix: 'kvts-launcher-ga-ev-',
      launcher: { agentPollMs: 600_000, agentConnectPollMs: 600_000 },
    });
    try {
      await fake.client.syncVirtualMachine(vmi);
      await waitFor(
        'agent reported disconnected',
        async () => (await fake.domain())?.guestAgent?.connected === false,
      );
      const agent = new FakeDriver({ host: fake.host }).guestAgent;
      agent.connect(ref, fakeGuestInfo(ref, { hostname: 'by-event' }));
      const d = await waitFor(
        'agent reported connected',
        async () => {
          const x = await fake.domain();
          return x?.guestAgent?.connected ? x : undefined;
        },
        5_000,
      );
      expect(d.guestAgent?.hostname).toBe('by-event');
      agent.disconnect(ref);
      await waitFor(
        'agent reported gone',
        async () => (await fake.domain())?.guestAgent?.connected === false,
        5_000,
      );
    } finally {
      await fake.close();
    }
  });
});
