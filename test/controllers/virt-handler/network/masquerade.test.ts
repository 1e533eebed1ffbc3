/**
 * The masquerade binding end to end without QEMU: two pods attached by the real CNI
 * plugins, phase 1 (bridge k6t-eth0, tap0, nftables NAT) in the launcher pod's namespace,
 * the launcher's DHCP server running inside it, and a stand-in guest: a third namespace
 * whose eth0 (a veth on k6t-eth0, with the guest MAC) is configured by busybox's real
 * udhcpc. Real TCP: the peer pod reaches a server in the guest through the launcher's pod
 * IP and the declared port; the guest reaches a server in the peer pod and is seen there
 * with the launcher's pod IP. Nothing is left behind.
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import { readNetworkCache } from '../../../../src/controllers/common/network-cache';
import { netnsName, PodNetwork } from '../../../../src/controllers/local/pod-runtime/pod-network';
import { masqueradeRuleset } from '../../../../src/controllers/virt-handler/network/masquerade-rules';
import { setUpPodNetwork } from '../../../../src/controllers/virt-handler/network/pod-nic-setup';
import { canTestNetworking, scopedSnapshot } from '../../../support/net-snapshot';
import { ECHO_CLIENT, ECHO_SERVER, inNs, startInNs } from '../../../support/netns-process';

const ECHO = ECHO_SERVER;
const CLIENT = ECHO_CLIENT;
const nodeIn = (ns: string, args: string[], marker: string) => startInNs(ns, process.execPath, args, marker);

describe.skipIf(!canTestNetworking())('masquerade binding (phase 1 + DHCP + NAT, stand-in guest)', () => {
  const tag = process.pid % 10000;
  const bridge = `kvtsm${tag}`;
  const guestNs = `kvts-guest-${tag}`;
  let root: string;
  let net: PodNetwork;
  const launcherUid = `aaaa${tag.toString(16).padStart(4, '0')}-0000-4000-8000-000000000001`;
  const peerUid = `bbbb${tag.toString(16).padStart(4, '0')}-0000-4000-8000-000000000002`;
  const children: ChildProcess[] = [];
  let before: ReturnType<typeof scopedSnapshot>;

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

  beforeAll(() => {
    before = scopedSnapshot([netnsName(launcherUid), netnsName(peerUid), guestNs], bridge);
    root = mkdtempSync(join(tmpdir(), 'kvts-masq-'));
    net = new PodNetwork({
      bridge,
      subnet: '10.244.80.0/24',
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
    const launcher = await net.setUp(launcherUid, join(root, 'launcher'));
    const peer = await net.setUp(peerUid, join(root, 'peer'));
    const lns = netnsName(launcherUid);
    const pns = netnsName(peerUid);
    const cached = await setUpPodNetwork(vmi, { netns: launcher.netns, socketDir: join(root, 'sockets') });
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
    expect(await setUpPodNetwork(vmi, { netns: launcher.netns, socketDir: join(root, 'sockets') })).toEqual(
      cached,
    );
    expect(inNs(lns, 'ip', ['-br', 'link'])).toBe(links);
    expect(inNs(lns, 'ip', ['-br', 'addr', 'show', 'k6t-eth0'])).toContain('10.0.2.1/24');
    expect(inNs(lns, 'ip', ['-d', 'link', 'show', 'tap0'])).toMatch(/master k6t-eth0/);
    expect(inNs(lns, 'nft', ['list', 'table', 'ip', 'kubevirt_nat'])).toContain('tcp dport 8080');

    // The stand-in guest: a namespace whose eth0 is a port of k6t-eth0 with the guest MAC.
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
    inNs(guestNs, 'ip', ['link', 'set', 'geth', 'name', 'eth0', 'address', cached[0].mac, 'mtu', '1500']);
    inNs(guestNs, 'ip', ['link', 'set', 'lo', 'up']);
    inNs(guestNs, 'ip', ['link', 'set', 'eth0', 'up']);

    const dhcp = await nodeIn(
      lns,
      ['--import', 'tsx', 'test/support/dhcp-server-main.ts', join(root, 'sockets')],
      'ready',
    );
    children.push(dhcp.child);
    // udhcpc as the tiny guest runs it; the script applies the lease with ip(8).
    const script = join(root, 'udhcpc.sh');
    writeFileSync(
      script,
      '#!/bin/sh\n[ "$1" = bound ] || exit 0\nip addr add "$ip/$mask" dev "$interface"\n[ -n "$mtu" ] && ip link set "$interface" mtu "$mtu"\n[ -n "$router" ] && ip route add default via "$router"\necho "lease $ip/$mask router $router dns $dns mtu $mtu" > "$(dirname "$0")/lease.txt"\n',
    );
    chmodSync(script, 0o755);
    inNs(guestNs, 'busybox', ['udhcpc', '-i', 'eth0', '-n', '-q', '-f', '-t', '5', '-T', '1', '-s', script]);
    const lease = execFileSync('cat', [join(root, 'lease.txt')], { encoding: 'utf8' });
    expect(lease).toMatch(/^lease 10\.0\.2\.2\/24 router 10\.0\.2\.1 /);
    expect(lease).toContain('mtu 1500');
    await expect.poll(() => dhcp.out()).toMatch(/ACK 10\.0\.2\.2 to /);

    // Inbound: peer pod -> launcher pod IP:8080 -> guest.
    const guestServer = await nodeIn(guestNs, ['-e', ECHO, '8080'], 'ready');
    children.push(guestServer.child);
    const inbound = inNs(pns, process.execPath, ['-e', CLIENT, launcher.ip, '8080', '100000']);
    expect(inbound.trim()).toBe('echoed 100000');
    await expect.poll(() => guestServer.out()).toMatch(/from \S+ got 100000/);
    process.stdout.write(
      `masquerade inbound: ${peer.ip} -> ${launcher.ip}:8080 -> guest 10.0.2.2: sent 100000, ${guestServer.out().trim().split('\n').pop()}, echoed 100000\n`,
    );
    // Undeclared ports are not forwarded.
    const closed = inNs(pns, process.execPath, ['-e', CLIENT, launcher.ip, '9090', '10']);
    expect(closed.trim()).toMatch(/^error .*ECONNREFUSED/);

    // Outbound: guest -> peer pod IP, seen there as the launcher's pod IP (masquerade).
    const peerServer = await nodeIn(pns, ['-e', ECHO, '7070'], 'ready');
    children.push(peerServer.child);
    const outbound = inNs(guestNs, process.execPath, ['-e', CLIENT, peer.ip, '7070', '50000']);
    expect(outbound.trim()).toBe('echoed 50000');
    await expect.poll(() => peerServer.out()).toContain(`from ${launcher.ip} got 50000`);
    process.stdout.write(
      `masquerade outbound: guest 10.0.2.2 -> ${peer.ip}:7070 seen from ${launcher.ip}: sent 50000, echoed 50000\n`,
    );

    for (const c of children.splice(0)) c.kill('SIGTERM');
    expect((await readNetworkCache(join(root, 'sockets')))?.interfaces[0].mac).toBe(cached[0].mac);
  });
});
