/**
 * The bridge binding end to end without QEMU: two pods attached by the real CNI plugins,
 * phase 1 moves the launcher pod's eth0 (and its address) onto the in-pod bridge, the
 * launcher's DHCP server offers the pod's own address, and a stand-in guest (a namespace
 * whose eth0 is a veth port of k6t-eth0 with the guest MAC) takes it with busybox's real
 * udhcpc. Real TCP: the peer pod reaches the guest's echo server on the launcher's pod IP
 * with no NAT, and the guest reaches the peer seen from that same address. Nothing is left.
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import { netnsName, PodNetwork } from '../../../../src/controllers/local/pod-runtime/pod-network';
import { setUpPodNetwork } from '../../../../src/controllers/virt-handler/network/pod-nic-setup';
import { canTestNetworking, scopedSnapshot } from '../../../support/net-snapshot';
import { ECHO_CLIENT, ECHO_SERVER, inNs, startInNs } from '../../../support/netns-process';

const nodeIn = (ns: string, args: string[], marker: string) => startInNs(ns, process.execPath, args, marker);

describe.skipIf(!canTestNetworking())('bridge binding (pod IP moved to the guest, stand-in guest)', () => {
  const tag = process.pid % 10000;
  const bridge = `kvtsb${tag}`;
  const guestNs = `kvts-bguest-${tag}`;
  let root: string;
  let net: PodNetwork;
  const launcherUid = `eeee${tag.toString(16).padStart(4, '0')}-0000-4000-8000-000000000001`;
  const peerUid = `ffff${tag.toString(16).padStart(4, '0')}-0000-4000-8000-000000000002`;
  const children: ChildProcess[] = [];
  let before: ReturnType<typeof scopedSnapshot>;

  const vmi = {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'vmb', namespace: 'default', uid: '21111111-2222-4333-8444-555555555555' },
    spec: {
      domain: { devices: { interfaces: [{ name: 'default', bridge: {} }] } },
      networks: [{ name: 'default', pod: {} }],
    },
  } as VirtualMachineInstance;

  beforeAll(() => {
    before = scopedSnapshot([netnsName(launcherUid), netnsName(peerUid), guestNs], bridge);
    root = mkdtempSync(join(tmpdir(), 'kvts-brb-'));
    net = new PodNetwork({
      bridge,
      subnet: '10.244.86.0/24',
      pluginDir: '/usr/lib/cni',
      dataDir: join(root, 'cni'),
    });
    for (const d of ['launcher', 'peer', 'sockets']) mkdirSync(join(root, d));
  });

  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    await net.tearDown(launcherUid, join(root, 'launcher')).catch(() => undefined);
    await net.tearDown(peerUid, join(root, 'peer')).catch(() => undefined);
    try {
      execFileSync('ip', ['netns', 'del', guestNs], { stdio: 'ignore' });
    } catch {
      // not made
    }
    try {
      execFileSync('ip', ['link', 'del', bridge], { stdio: 'ignore' });
    } catch {
      // not made
    }
    rmSync(root, { recursive: true, force: true });
    expect(scopedSnapshot([netnsName(launcherUid), netnsName(peerUid), guestNs], bridge)).toEqual(before);
  });

  it('gives the guest the pod IP and carries TCP to and from it', async () => {
    const launcher = await net.setUp(launcherUid, join(root, 'launcher'));
    const peer = await net.setUp(peerUid, join(root, 'peer'));
    const lns = netnsName(launcherUid);
    const pns = netnsName(peerUid);
    const podMAC = (JSON.parse(inNs(lns, 'ip', ['-j', 'link', 'show', 'eth0'])) as { address: string }[])[0]
      .address;
    const [cached] = await setUpPodNetwork(vmi, { netns: launcher.netns, socketDir: join(root, 'sockets') });
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
    execFileSync('ip', ['netns', 'add', guestNs]);
    inNs(lns, 'ip', [
      'link',
      'add',
      'gport',
      'type',
      'veth',
      'peer',
      'name',
      'geth',
      'netns',
      `/run/netns/${guestNs}`,
    ]);
    inNs(lns, 'ip', ['link', 'set', 'gport', 'master', 'k6t-eth0', 'up']);
    inNs(guestNs, 'ip', ['link', 'set', 'geth', 'name', 'eth0', 'address', cached.mac]);
    inNs(guestNs, 'ip', ['link', 'set', 'lo', 'up']);
    inNs(guestNs, 'ip', ['link', 'set', 'eth0', 'up']);

    const dhcp = await nodeIn(
      lns,
      ['--import', 'tsx', 'test/support/dhcp-server-main.ts', join(root, 'sockets')],
      'ready',
    );
    children.push(dhcp.child);
    const script = join(root, 'udhcpc.sh');
    writeFileSync(
      script,
      '#!/bin/sh\n[ "$1" = bound ] || exit 0\nip addr add "$ip/$mask" dev "$interface"\necho "lease $ip/$mask router=$router serverid=$serverid mtu=$mtu" > "$(dirname "$0")/lease.txt"\n',
    );
    chmodSync(script, 0o755);
    inNs(guestNs, 'busybox', ['udhcpc', '-i', 'eth0', '-n', '-q', '-f', '-t', '5', '-T', '1', '-s', script]);
    const lease = readFileSync(join(root, 'lease.txt'), 'utf8');
    expect(lease).toBe(`lease ${launcher.ip}/24 router= serverid=169.254.75.10 mtu=1500\n`);
    expect(inNs(guestNs, 'ip', ['-4', '-br', 'addr', 'show', 'eth0'])).toContain(`${launcher.ip}/24`);

    // Inbound: the peer pod reaches the guest's echo on the pod IP, no NAT in between.
    const guestServer = await nodeIn(guestNs, ['-e', ECHO_SERVER, '8080'], 'ready');
    children.push(guestServer.child);
    const inbound = inNs(pns, process.execPath, ['-e', ECHO_CLIENT, launcher.ip, '8080', '100000']);
    expect(inbound.trim()).toBe('echoed 100000');
    await expect.poll(() => guestServer.out()).toContain(`from ${peer.ip} got 100000`);
    // Outbound: the guest reaches the peer from the pod IP it now holds.
    const peerServer = await nodeIn(pns, ['-e', ECHO_SERVER, '7070'], 'ready');
    children.push(peerServer.child);
    const outbound = inNs(guestNs, process.execPath, ['-e', ECHO_CLIENT, peer.ip, '7070', '50000']);
    expect(outbound.trim()).toBe('echoed 50000');
    await expect.poll(() => peerServer.out()).toContain(`from ${launcher.ip} got 50000`);
    process.stdout.write(
      `bridge binding: guest holds ${launcher.ip}; ${peer.ip} -> guest:8080 echoed 100000; guest -> ${peer.ip}:7070 echoed 50000\n`,
    );
    for (const c of children.splice(0)) c.kill('SIGTERM');
  });
});
