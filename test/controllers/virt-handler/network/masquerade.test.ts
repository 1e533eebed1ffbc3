/**
 * The masquerade binding end to end without QEMU: two pods attached by the real CNI
 * plugins, phase 1 (bridge k6t-eth0, tap0, nftables NAT) in the launcher pod's namespace,
 * the launcher's DHCP server running inside it, and a stand-in guest: a third namespace
 * whose eth0 (a veth on k6t-eth0, with the guest MAC) is configured by busybox's real
 * udhcpc. Real TCP: the peer pod reaches a server in the guest through the launcher's pod
 * IP and the declared port; the guest reaches a server in the peer pod and is seen there
 * with the launcher's pod IP. Nothing is left behind.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import { readNetworkCache } from '../../../../src/controllers/common/network-cache';
import { masqueradeRuleset } from '../../../../src/controllers/virt-handler/network/masquerade-rules';
import { setUpPodNetwork } from '../../../../src/controllers/virt-handler/network/pod-nic-setup';
import { canTestNetworking } from '../../../support/net-snapshot';
import { inNs } from '../../../support/netns-process';
import {
  addStandInGuest,
  attachPods,
  echoFrom,
  echoServer,
  startDhcpServer,
  takeLease,
  usePodPair,
} from './stand-in-guest';

describe.skipIf(!canTestNetworking())('masquerade binding (phase 1 + DHCP + NAT, stand-in guest)', () => {
  const pair = usePodPair({
    bridgePrefix: 'kvtsm',
    guestNsPrefix: 'kvts-guest-',
    launcherUidPrefix: 'aaaa',
    peerUidPrefix: 'bbbb',
    subnet: '10.244.80.0/24',
    tmpPrefix: 'kvts-masq-',
  });

  const vmi: VirtualMachineInstance = {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'vm1', namespace: 'default', uid: '11111111-2222-4333-8444-555555555555' },
    spec: {
      domain: {
        devices: { interfaces: [{ name: 'default', masquerade: {}, ports: [{ port: 8080 }] }] },
      },
      networks: [{ name: 'default', pod: {} }],
    },
  } as VirtualMachineInstance;

  it('renders only declared ports, and all when none are', () => {
    const some = masqueradeRuleset({
      podIf: 'eth0',
      bridge: 'k6t-eth0',
      ports: [{ port: 80 }, { port: 53, protocol: 'UDP' }],
      subject: 's',
    });
    expect(some).toContain('tcp dport { 80 } counter dnat to 10.0.2.2');
    expect(some).toContain('udp dport { 53 } counter dnat to 10.0.2.2');
    const all = masqueradeRuleset({ podIf: 'eth0', bridge: 'k6t-eth0', subject: 's' });
    expect(all).toMatch(/KUBEVIRT_PREINBOUND \{\n\s+counter dnat to 10\.0\.2\.2\n/);
    expect(() => masqueradeRuleset({ podIf: 'eth0; drop', bridge: 'k6t-eth0', subject: 's' })).toThrow(
      /not an interface name/,
    );
    expect(() =>
      masqueradeRuleset({
        podIf: 'eth0',
        bridge: 'b',
        ports: [{ port: 70000 }],
        subject: 'vmi x: spec.domain.devices.interfaces[0]',
      }),
    ).toThrow('vmi x: spec.domain.devices.interfaces[0].ports[0].port: 70000 is not a port number (1-65535)');
  });

  it('carries TCP both ways between a DHCP-configured guest and another pod', async () => {
    const { launcher, peer, lns, pns } = await attachPods(pair);
    const cached = await setUpPodNetwork(vmi, {
      netns: launcher.netns,
      socketDir: join(pair.root, 'sockets'),
    });
    expect(cached).toHaveLength(1);
    expect(cached[0]).toMatchObject({
      tap: 'tap0',
      bridge: 'k6t-eth0',
      guestIP: '10.0.2.2',
      gateway: '10.0.2.1',
      mtu: 1500,
      podIP: launcher.ip,
    });
    expect(cached[0].mac).toMatch(/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/);
    // Idempotent: a second run changes nothing.
    const links = inNs(lns, 'ip', ['-br', 'link']);
    expect(
      await setUpPodNetwork(vmi, { netns: launcher.netns, socketDir: join(pair.root, 'sockets') }),
    ).toEqual(cached);
    expect(inNs(lns, 'ip', ['-br', 'link'])).toBe(links);
    expect(inNs(lns, 'ip', ['-br', 'addr', 'show', 'k6t-eth0'])).toContain('10.0.2.1/24');
    expect(inNs(lns, 'ip', ['-d', 'link', 'show', 'tap0'])).toMatch(/master k6t-eth0/);
    expect(inNs(lns, 'nft', ['list', 'table', 'ip', 'kubevirt_nat'])).toContain('tcp dport 8080');

    // The stand-in guest: a namespace whose eth0 is a port of k6t-eth0 with the guest MAC.
    addStandInGuest(pair, lns, cached[0].mac, ['mtu', '1500']);
    const dhcp = await startDhcpServer(pair, lns);
    // udhcpc as the tiny guest runs it; the script applies the lease with ip(8).
    const lease = takeLease(
      pair,
      '#!/bin/sh\n[ "$1" = bound ] || exit 0\nip addr add "$ip/$mask" dev "$interface"\n[ -n "$mtu" ] && ip link set "$interface" mtu "$mtu"\n[ -n "$router" ] && ip route add default via "$router"\necho "lease $ip/$mask router $router dns $dns mtu $mtu" > "$(dirname "$0")/lease.txt"\n',
    );
    expect(lease).toMatch(/^lease 10\.0\.2\.2\/24 router 10\.0\.2\.1 /);
    expect(lease).toContain('mtu 1500');
    await expect.poll(() => dhcp.out()).toMatch(/ACK 10\.0\.2\.2 to /);

    // Inbound: peer pod -> launcher pod IP:8080 -> guest.
    const guestServer = await echoServer(pair, pair.guestNs, 8080);
    expect(echoFrom(pns, launcher.ip, 8080, 100000)).toBe('echoed 100000');
    await expect.poll(() => guestServer.out()).toMatch(/from \S+ got 100000/);
    process.stdout.write(
      `masquerade inbound: ${peer.ip} -> ${launcher.ip}:8080 -> guest 10.0.2.2: sent 100000, ${guestServer.out().trim().split('\n').pop()}, echoed 100000\n`,
    );
    // Undeclared ports are not forwarded.
    expect(echoFrom(pns, launcher.ip, 9090, 10)).toMatch(/^error .*ECONNREFUSED/);

    // Outbound: guest -> peer pod IP, seen there as the launcher's pod IP (masquerade).
    const peerServer = await echoServer(pair, pns, 7070);
    expect(echoFrom(pair.guestNs, peer.ip, 7070, 50000)).toBe('echoed 50000');
    await expect.poll(() => peerServer.out()).toContain(`from ${launcher.ip} got 50000`);
    process.stdout.write(
      `masquerade outbound: guest 10.0.2.2 -> ${peer.ip}:7070 seen from ${launcher.ip}: sent 50000, echoed 50000\n`,
    );

    for (const c of pair.children.splice(0)) c.kill('SIGTERM');
    expect((await readNetworkCache(join(pair.root, 'sockets')))?.interfaces[0].mac).toBe(cached[0].mac);
  });
});
