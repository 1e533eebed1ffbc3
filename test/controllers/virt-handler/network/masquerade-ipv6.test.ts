/**
 * The masquerade binding's IPv6 half, on a dual-stack pod network (host-local with an
 * IPv4 and a unique local IPv6 range): phase 1 gives the in-pod bridge upstream's
 * fd10:0:2::1/120, IPv6 forwarding and the ip6 kubevirt_nat table. No DHCPv6 or router
 * advertisement is served, so the stand-in guest (a namespace whose eth0 is a veth port
 * of k6t-eth0) is configured as upstream's guests are without them: fd10:0:2::2/120, default via
 * fd10:0:2::1. Real TCP over IPv6: the guest reaches another pod by its IPv6 address and
 * is seen there from the launcher pod's IPv6 address (masquerade), and that pod reaches the
 * guest's server through the launcher pod's IPv6 address and the declared port (DNAT).
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import { netnsName, PodNetwork } from '../../../../src/controllers/local/pod-runtime/pod-network';
import { setUpPodNetwork } from '../../../../src/controllers/virt-handler/network/pod-nic-setup';
import { canTestNetworking, scopedSnapshot } from '../../../support/net-snapshot';
import { ECHO_CLIENT, ECHO_SERVER, inNs, startInNs } from '../../../support/netns-process';

const ECHO6 = ECHO_SERVER.replace("'0.0.0.0'", "'::'");

describe.skipIf(!canTestNetworking())('masquerade binding over IPv6 (dual-stack pod, stand-in guest)', () => {
  const tag = process.pid % 10000;
  const bridge = `kvtsv${tag}`;
  const guestNs = `kvts-g6-${tag}`;
  const launcherUid = `a6a6${tag.toString(16).padStart(4, '0')}-0000-4000-8000-000000000001`;
  const peerUid = `b6b6${tag.toString(16).padStart(4, '0')}-0000-4000-8000-000000000002`;
  const children: ChildProcess[] = [];
  let root: string;
  let net: PodNetwork;
  let before: ReturnType<typeof scopedSnapshot>;
  const vmi = {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'vm6', namespace: 'default', uid: '61111111-2222-4333-8444-555555555555' },
    spec: {
      domain: { devices: { interfaces: [{ name: 'default', masquerade: {}, ports: [{ port: 8080 }] }] } },
      networks: [{ name: 'default', pod: {} }],
    },
  } as VirtualMachineInstance;

  beforeAll(() => {
    before = scopedSnapshot([netnsName(launcherUid), netnsName(peerUid), guestNs], bridge);
    root = mkdtempSync(join(tmpdir(), 'kvts-m6-'));
    net = new PodNetwork({
      bridge,
      subnet: '10.244.94.0/24',
      subnet6: 'fd00:244:94::/64',
      pluginDir: '/usr/lib/cni',
      dataDir: join(root, 'cni'),
    });
    for (const d of ['launcher', 'peer', 'sockets']) mkdirSync(join(root, d));
  });

  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    await net.tearDown(launcherUid, join(root, 'launcher')).catch(() => undefined);
    await net.tearDown(peerUid, join(root, 'peer')).catch(() => undefined);
    for (const args of [
      ['netns', 'del', guestNs],
      ['link', 'del', bridge],
    ]) {
      try {
        execFileSync('ip', args, { stdio: 'ignore' });
      } catch {
        // not made
      }
    }
    rmSync(root, { recursive: true, force: true });
    expect(scopedSnapshot([netnsName(launcherUid), netnsName(peerUid), guestNs], bridge)).toEqual(before);
  });

  it('NATs the guest fd10:0:2::2 behind the pod IPv6 both ways', async () => {
    const launcher = await net.setUp(launcherUid, join(root, 'launcher'));
    const peer = await net.setUp(peerUid, join(root, 'peer'));
    const lns = netnsName(launcherUid);
    const pns = netnsName(peerUid);
    const launcher6 = launcher.cidr6?.split('/')[0] ?? '';
    const peer6 = peer.cidr6?.split('/')[0] ?? '';
    expect(launcher6).toMatch(/^fd00:244:94::/);
    expect(peer6).toMatch(/^fd00:244:94::/);

    const [cached] = await setUpPodNetwork(vmi, { netns: launcher.netns, socketDir: join(root, 'sockets') });
    expect(cached.ipv6).toEqual({
      guestIP: 'fd10:0:2::2',
      prefixLength: 120,
      gateway: 'fd10:0:2::1',
      podIP: launcher6,
    });
    expect(inNs(lns, 'ip', ['-6', '-br', 'addr', 'show', 'k6t-eth0'])).toContain('fd10:0:2::1/120');
    expect(inNs(lns, 'sysctl', ['-n', 'net.ipv6.conf.all.forwarding']).trim()).toBe('1');
    const nat6 = inNs(lns, 'nft', ['list', 'table', 'ip6', 'kubevirt_nat']);
    expect(nat6).toContain('ip6 saddr fd10:0:2::2 oifname "eth0" counter');
    expect(nat6).toMatch(/tcp dport 8080 counter packets \d+ bytes \d+ dnat to fd10:0:2::2/);

    // The stand-in guest, configured statically as upstream's guests are without DHCPv6.
    execFileSync('ip', ['netns', 'add', guestNs]);
    inNs(lns, 'ip', [
      'link',
      'add',
      'g6port',
      'type',
      'veth',
      'peer',
      'name',
      'g6eth',
      'netns',
      `/run/netns/${guestNs}`,
    ]);
    inNs(lns, 'ip', ['link', 'set', 'g6port', 'master', 'k6t-eth0', 'up']);
    inNs(guestNs, 'ip', ['link', 'set', 'g6eth', 'name', 'eth0', 'address', cached.mac]);
    inNs(guestNs, 'ip', ['link', 'set', 'lo', 'up']);
    inNs(guestNs, 'ip', ['link', 'set', 'eth0', 'up']);
    inNs(guestNs, 'ip', ['-6', 'addr', 'add', 'fd10:0:2::2/120', 'dev', 'eth0', 'nodad']);
    inNs(guestNs, 'ip', ['-6', 'route', 'add', 'default', 'via', 'fd10:0:2::1', 'dev', 'eth0']);

    // Outbound: guest -> peer pod by its IPv6, seen there from the launcher pod's IPv6.
    const peerServer = await startInNs(pns, process.execPath, ['-e', ECHO6, '7070'], 'ready');
    children.push(peerServer.child);
    const out = inNs(guestNs, process.execPath, ['-e', ECHO_CLIENT, peer6, '7070', '50000']);
    expect(out.trim()).toBe('echoed 50000');
    await expect.poll(() => peerServer.out()).toContain(`from ${launcher6} got 50000`);
    // Inbound: peer -> launcher pod IPv6 :8080 -> guest, seen there from the peer's IPv6.
    const guestServer = await startInNs(guestNs, process.execPath, ['-e', ECHO6, '8080'], 'ready');
    children.push(guestServer.child);
    const inbound = inNs(pns, process.execPath, ['-e', ECHO_CLIENT, launcher6, '8080', '100000']);
    expect(inbound.trim()).toBe('echoed 100000');
    await expect.poll(() => guestServer.out()).toContain(`from ${peer6} got 100000`);
    process.stdout.write(
      `masquerade IPv6: guest fd10:0:2::2 -> [${peer6}]:7070 echoed 50000 (seen from ${launcher6}); [${peer6}] -> [${launcher6}]:8080 echoed 100000\n`,
    );
    for (const c of children.splice(0)) c.kill('SIGTERM');
  });
});
