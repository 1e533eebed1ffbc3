/**
 * virt-launcher's guest agent on the fake driver, over the real gRPC socket: the domain
 * report carries the agent's connection state and what it reports, the change reaches the
 * notify pipe, and GetGuestInfo answers upstream's VirtualMachineInstanceGuestAgentInfo.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api';
import { type LauncherDomain, NOTIFY_PIPE_SOCKET } from '../../../src/controllers/launcher/domain-report';
import { toGuestAgentInfo } from '../../../src/controllers/launcher/guest-agent-report';
import { VirtLauncher } from '../../../src/controllers/launcher/launcher';
import {
  type DomainEventNotification,
  LauncherClient,
  type NotifyServer,
  serveNotify,
} from '../../../src/controllers/launcher-protocol';
import { FakeDriver, FakeHost, fakeGuestInfo } from '../../../src/drivers';
import { waitFor } from '../../support/wait';

const ref = { namespace: 'ns1', name: 'vm1' };
const vmi: VirtualMachineInstance = {
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineInstance',
  metadata: { name: 'vm1', namespace: 'ns1', uid: 'uid-1' },
  spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } },
};

describe('VirtLauncher guest agent (fake driver)', () => {
  let dir: string;
  let host: FakeHost;
  let launcher: VirtLauncher;
  let client: LauncherClient;
  let notify: NotifyServer;
  let events: DomainEventNotification[];

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kvts-launcher-ga-'));
    host = new FakeHost();
    events = [];
    notify = await serveNotify(join(dir, NOTIFY_PIPE_SOCKET), { onDomainEvent: (e) => events.push(e) });
    launcher = new VirtLauncher({
      ...ref,
      uid: 'uid-1',
      gracePeriodSeconds: 5,
      socketDir: dir,
      connectDriver: async () => new FakeDriver({ host }),
      syncOptions: { useEmulation: true },
      agentPollMs: 20,
      agentConnectPollMs: 20,
      log: () => {},
    });
    await launcher.start();
    client = new LauncherClient(join(dir, 'launcher-sock'), { timeoutMs: 5_000 });
  });

  afterEach(async () => {
    client.close();
    await launcher.exit(0);
    await notify.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const domain = async () => (await client.getDomain()) as LauncherDomain | undefined;
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
