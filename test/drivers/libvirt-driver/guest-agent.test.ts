import { describe, expect, it } from 'vitest';
import type { DomainRef } from '../../../src/drivers/driver';
import {
  LibvirtError,
  VIR_ERR_AGENT_UNRESPONSIVE,
  VIR_ERR_INTERNAL_ERROR,
} from '../../../src/drivers/libvirt';
import {
  agentChannelConnected,
  libvirtGuestAgent,
  parseFilesystems,
  parseInterfaces,
  parseOSInfo,
  parseUsers,
} from '../../../src/drivers/libvirt-driver/guest-agent';

// Replies recorded from Debian's qemu-ga 7.2 in the tiny test guest (virsh qemu-agent-command).
const OSINFO = {
  name: 'kubevirt-ts tiny guest',
  'kernel-release': '6.1.0-57-amd64',
  version: '6 (recipe 6, busybox)',
  'pretty-name': 'kubevirt-ts tiny guest 6',
  'version-id': '6',
  'kernel-version': '#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-3 (2026-11-26)',
  machine: 'x86_64',
  id: 'kubevirt-ts-guest',
};
const INTERFACES = [
  {
    name: 'lo',
    'ip-addresses': [
      { 'ip-address-type': 'ipv4', 'ip-address': '127.0.0.1', prefix: 8 },
      { 'ip-address-type': 'ipv6', 'ip-address': '::1', prefix: 128 },
    ],
    statistics: { 'tx-packets': 0, 'rx-bytes': 0 },
    'hardware-address': '00:00:00:00:00:00',
  },
  { name: 'eth0', 'hardware-address': '52:54:00:AB:CD:EF' },
];

const liveXml = (
  state?: string,
  name = 'org.qemu.guest_agent.0',
) => `<domain type='qemu'><name>ns_vm</name><devices>
  <channel type='unix'><source mode='bind' path='/x/org.qemu.guest_agent.0'/>
    <target type='virtio' name='${name}'${state ? ` state='${state}'` : ''}/><alias name='channel0'/></channel>
</devices></domain>`;

describe('guest agent replies', () => {
  it('maps guest-get-osinfo to upstream field names', () => {
    expect(parseOSInfo(OSINFO)).toEqual({
      id: 'kubevirt-ts-guest',
      name: 'kubevirt-ts tiny guest',
      prettyName: 'kubevirt-ts tiny guest 6',
      version: '6 (recipe 6, busybox)',
      versionId: '6',
      kernelRelease: '6.1.0-57-amd64',
      kernelVersion: '#1 SMP PREEMPT_DYNAMIC Debian 6.1.192-3 (2026-11-26)',
      machine: 'x86_64',
    });
    expect(parseOSInfo({ name: 'Windows' })).toEqual({ name: 'Windows' });
  });

  it('maps interfaces (MAC lowercased, an interface without addresses keeps an empty list)', () => {
    expect(parseInterfaces(INTERFACES)).toEqual([
      {
        name: 'lo',
        mac: '00:00:00:00:00:00',
        ipAddresses: [
          { address: '127.0.0.1', type: 'ipv4', prefix: 8 },
          { address: '::1', type: 'ipv6', prefix: 128 },
        ],
      },
      { name: 'eth0', mac: '52:54:00:ab:cd:ef', ipAddresses: [] },
    ]);
    expect(parseInterfaces('garbage')).toEqual([]);
  });

  it('maps users and filesystems, dropping nameless entries', () => {
    expect(parseUsers([{ user: 'root', 'login-time': 1700000000.5 }, { 'login-time': 1 }])).toEqual([
      { name: 'root', loginTime: 1700000000.5 },
    ]);
    expect(
      parseFilesystems([
        {
          name: 'vda1',
          mountpoint: '/',
          type: 'ext4',
          'used-bytes': 100,
          'total-bytes': 1000,
          disk: [{ 'bus-type': 'virtio', serial: 'abc' }],
        },
      ]),
    ).toEqual([
      {
        name: 'vda1',
        mountPoint: '/',
        type: 'ext4',
        usedBytes: 100,
        totalBytes: 1000,
        disks: [{ busType: 'virtio', serial: 'abc' }],
      },
    ]);
  });

  it("reads the agent channel's state from the live domain XML", () => {
    expect(agentChannelConnected(liveXml('connected'))).toBe(true);
    expect(agentChannelConnected(liveXml('disconnected'))).toBe(false);
    expect(agentChannelConnected(liveXml())).toBe(false);
    expect(agentChannelConnected(liveXml('connected', 'org.other.port'))).toBe(false);
    expect(agentChannelConnected('<domain><devices/></domain>')).toBe(false);
  });
});

describe('libvirtGuestAgent', () => {
  const ref: DomainRef = { namespace: 'ns', name: 'vm' };
  const dom = { name: 'ns_vm', uuid: '00000000-0000-0000-0000-000000000001', id: 3 };

  function host(state: string | undefined, replies: Record<string, unknown | Error>) {
    const sent: string[] = [];
    return {
      sent,
      agent: libvirtGuestAgent({
        lookup: async () => dom,
        liveXml: async () => liveXml(state),
        agentCommand: async (_d, cmd, timeoutSec) => {
          expect(timeoutSec).toBeGreaterThan(0); // never libvirt's block-forever -2
          const execute = JSON.parse(cmd).execute as string;
          sent.push(execute);
          const r = replies[execute];
          if (r instanceof Error) throw r;
          if (r === undefined) {
            throw new LibvirtError({
              code: VIR_ERR_INTERNAL_ERROR,
              domain: 10,
              level: 2,
              message: `unable to execute QEMU agent command '${execute}': The command ${execute} has not been found`,
            });
          }
          return JSON.stringify({ return: r });
        },
      }),
    };
  }

  it('an unconnected channel is no agent: undefined, and no command is sent', async () => {
    const h = host('disconnected', {});
    expect(await h.agent.connected(ref)).toBe(false);
    expect(await h.agent.guestInfo(ref)).toBeUndefined();
    expect(h.sent).toEqual([]);
  });

  it('an agent that does not answer guest-info is no agent', async () => {
    const unresponsive = new LibvirtError({
      code: VIR_ERR_AGENT_UNRESPONSIVE,
      domain: 10,
      level: 2,
      message: 'Guest agent is not responding',
    });
    const h = host('connected', { 'guest-info': unresponsive });
    expect(await h.agent.connected(ref)).toBe(true);
    expect(await h.agent.guestInfo(ref)).toBeUndefined();
  });

  it('collects every part, leaving out what the agent lacks', async () => {
    const h = host('connected', {
      'guest-info': { version: '7.2.22', supported_commands: [{ name: 'guest-ping', enabled: true }] },
      'guest-get-osinfo': OSINFO,
      'guest-get-host-name': { 'host-name': 'kubevirt-ts-guest' },
      'guest-get-timezone': { zone: 'UTC', offset: 0 },
      'guest-network-get-interfaces': INTERFACES,
      'guest-get-users': [],
      // guest-get-fsinfo: not found
    });
    const info = await h.agent.guestInfo(ref);
    expect(info).toEqual({
      agentVersion: '7.2.22',
      supportedCommands: [{ name: 'guest-ping', enabled: true }],
      os: parseOSInfo(OSINFO),
      hostname: 'kubevirt-ts-guest',
      timezone: { zone: 'UTC', offsetSeconds: 0 },
      interfaces: parseInterfaces(INTERFACES),
      users: [],
    });
    expect(info && 'filesystems' in info).toBe(false);
    expect(h.sent.sort()).toEqual(
      [
        'guest-get-fsinfo',
        'guest-get-host-name',
        'guest-get-osinfo',
        'guest-get-timezone',
        'guest-get-users',
        'guest-info',
        'guest-network-get-interfaces',
      ].sort(),
    );
  });
});
