/**
 * The bridge binding end to end without QEMU: two pods attached by the real CNI plugins,
 * phase 1 moves the launcher pod's eth0 (and its address) onto the in-pod bridge, the
 * launcher's DHCP server offers the pod's own address, and a stand-in guest (a namespace
 * whose eth0 is a veth port of k6t-eth0 with the guest MAC) takes it with busybox's real
 * udhcpc. Real TCP: the peer pod reaches the guest's echo server on the launcher's pod IP
 * with no NAT, and the guest reaches the peer seen from that same address. Nothing is left.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
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

describe.skipIf(!canTestNetworking())('bridge binding (pod IP moved to the guest, stand-in guest)', () => {
  const pair = usePodPair({
    bridgePrefix: 'kvtsb',
    guestNsPrefix: 'kvts-bguest-',
    launcherUidPrefix: 'eeee',
    peerUidPrefix: 'ffff',
    subnet: '10.244.86.0/24',
    tmpPrefix: 'kvts-brb-',
  });

  const vmi = {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'vmb', namespace: 'default', uid: '21111111-2222-4333-8444-555555555555' },
    spec: {
      domain: { devices: { interfaces: [{ name: 'default', bridge: {} }] } },
      networks: [{ name: 'default', pod: {} }],
    },
  } as VirtualMachineInstance;

  it('gives the guest the pod IP and carries TCP to and from it', async () => {
    const { launcher, peer, lns, pns } = await attachPods(pair);
    const podMAC = (JSON.parse(inNs(lns, 'ip', ['-j', 'link', 'show', 'eth0'])) as { address: string }[])[0]
      .address;
    const [cached] = await setUpPodNetwork(vmi, {
      netns: launcher.netns,
      socketDir: join(pair.root, 'sockets'),
    });
    expect(cached).toMatchObject({
      binding: 'bridge',
      tap: 'tap0',
      bridge: 'k6t-eth0',
      mac: podMAC,
      guestIP: launcher.ip,
      prefixLength: 24,
      serverIP: '169.254.75.10',
      mtu: 1500,
      podIP: launcher.ip,
    });
    expect(cached.gateway).toBeUndefined(); // the test's pod network has no gateway
    // The pod keeps no address of its own: eth0 is now eth0-nic, a port of the bridge.
    const addrs = inNs(lns, 'ip', ['-4', '-br', 'addr']);
    expect(addrs).not.toContain(launcher.ip);
    expect(addrs).toMatch(/k6t-eth0\s+\S+\s+169\.254\.75\.10\/32/);
    expect(inNs(lns, 'ip', ['-d', 'link', 'show', 'eth0-nic'])).toMatch(/master k6t-eth0/);
    expect(inNs(lns, 'ip', ['-d', 'link', 'show', 'tap0'])).toMatch(/master k6t-eth0/);
    expect(() => inNs(lns, 'ip', ['link', 'show', 'eth0'])).toThrow();

    // The stand-in guest: eth0 with the pod's original MAC on k6t-eth0.
    addStandInGuest(pair, lns, cached.mac);
    await startDhcpServer(pair, lns);
    const lease = takeLease(
      pair,
      '#!/bin/sh\n[ "$1" = bound ] || exit 0\nip addr add "$ip/$mask" dev "$interface"\necho "lease $ip/$mask router=$router serverid=$serverid mtu=$mtu" > "$(dirname "$0")/lease.txt"\n',
    );
    expect(lease).toBe(`lease ${launcher.ip}/24 router= serverid=169.254.75.10 mtu=1500\n`);
    expect(inNs(pair.guestNs, 'ip', ['-4', '-br', 'addr', 'show', 'eth0'])).toContain(`${launcher.ip}/24`);

    // Inbound: the peer pod reaches the guest's echo on the pod IP, no NAT in between.
    const guestServer = await echoServer(pair, pair.guestNs, 8080);
    expect(echoFrom(pns, launcher.ip, 8080, 100000)).toBe('echoed 100000');
    await expect.poll(() => guestServer.out()).toContain(`from ${peer.ip} got 100000`);
    // Outbound: the guest reaches the peer from the pod IP it now holds.
    const peerServer = await echoServer(pair, pns, 7070);
    expect(echoFrom(pair.guestNs, peer.ip, 7070, 50000)).toBe('echoed 50000');
    await expect.poll(() => peerServer.out()).toContain(`from ${launcher.ip} got 50000`);
    process.stdout.write(
      `bridge binding: guest holds ${launcher.ip}; ${peer.ip} -> guest:8080 echoed 100000; guest -> ${peer.ip}:7070 echoed 50000\n`,
    );
    for (const c of pair.children.splice(0)) c.kill('SIGTERM');
  });
});
