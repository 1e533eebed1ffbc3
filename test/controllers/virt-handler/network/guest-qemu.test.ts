/**
 * A real guest on the masquerade and on the bridge binding, QEMU started directly (no libvirt) inside the
 * launcher pod's namespace on the tap phase 1 made: the tiny guest's udhcpc gets its
 * lease from the launcher's DHCP server, its TCP echo server on 8080 is reached from
 * another pod through the launcher's pod IP, and it sends 64 KiB to a server in the other
 * pod by that pod's IP, seen there as coming from the launcher's pod IP. TCG, so slow;
 * the bytes, not the time, are asserted. On the bridge binding the guest holds the pod IP
 * itself (no NAT): the same traffic, and the lease is the pod's address with no router.
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import { netnsName, PodNetwork } from '../../../../src/controllers/local/pod-runtime/pod-network';
import { setUpPodNetwork } from '../../../../src/controllers/virt-handler/network/pod-nic-setup';
import { canTestNetworking, networkGuestDir, scopedSnapshot } from '../../../support/net-snapshot';
import { ECHO_CLIENT, ECHO_SERVER, inNs, startInNs } from '../../../support/netns-process';

// Its own recipe-7 directory: the shared `current` link may point at an older recipe.
const GUEST = networkGuestDir() ?? '';
const guestReady = GUEST !== '' && existsSync(join(GUEST, 'vmlinuz.bzImage'));

describe.skipIf(!canTestNetworking() || !guestReady).each([
  { binding: 'masquerade' as const, seq: 0 },
  { binding: 'bridge' as const, seq: 1 },
])('tiny guest under QEMU on the $binding binding', ({ binding, seq }) => {
  const tag = (process.pid % 10000) * 2 + seq;
  const bridge = `kvtsq${tag}`;
  let root: string;
  let net: PodNetwork;
  const launcherUid = `cccc${tag.toString(16).padStart(4, '0')}-0000-4000-8000-000000000001`;
  const peerUid = `dddd${tag.toString(16).padStart(4, '0')}-0000-4000-8000-000000000002`;
  const children: ChildProcess[] = [];
  let before: ReturnType<typeof scopedSnapshot>;
  const vmi = {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'vm-net', namespace: 'default', uid: '99999999-2222-4333-8444-555555555555' },
    spec: {
      domain: {
        devices: {
          interfaces: [
            binding === 'masquerade'
              ? { name: 'default', masquerade: {}, ports: [{ port: 8080 }] }
              : { name: 'default', bridge: {} },
          ],
        },
      },
      networks: [{ name: 'default', pod: {} }],
    },
  } as VirtualMachineInstance;

  beforeAll(() => {
    before = scopedSnapshot([netnsName(launcherUid), netnsName(peerUid)], bridge);
    root = mkdtempSync(join(tmpdir(), 'kvts-gq-'));
    net = new PodNetwork({
      bridge,
      subnet: `10.244.${83 + seq}.0/24`,
      pluginDir: '/usr/lib/cni',
      dataDir: join(root, 'cni'),
    });
    for (const d of ['launcher', 'peer', 'sockets']) mkdirSync(join(root, d));
  });

  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 300));
    await net.tearDown(launcherUid, join(root, 'launcher')).catch(() => undefined);
    await net.tearDown(peerUid, join(root, 'peer')).catch(() => undefined);
    try {
      execFileSync('ip', ['link', 'del', bridge], { stdio: 'ignore' });
    } catch {
      // not made
    }
    rmSync(root, { recursive: true, force: true });
    expect(scopedSnapshot([netnsName(launcherUid), netnsName(peerUid)], bridge)).toEqual(before);
  });

  it('boots, takes its DHCP lease, and carries TCP both ways', { timeout: 240_000 }, async () => {
    const launcher = await net.setUp(launcherUid, join(root, 'launcher'));
    const peer = await net.setUp(peerUid, join(root, 'peer'));
    const lns = netnsName(launcherUid);
    const pns = netnsName(peerUid);
    const [cached] = await setUpPodNetwork(vmi, {
      netns: launcher.netns,
      socketDir: join(root, 'sockets'),
    });
    const dhcp = await startInNs(
      lns,
      process.execPath,
      ['--import', 'tsx', 'test/support/dhcp-server-main.ts', join(root, 'sockets')],
      'ready',
    );
    children.push(dhcp.child);
    const peerServer = await startInNs(pns, process.execPath, ['-e', ECHO_SERVER, '7070'], 'ready');
    children.push(peerServer.child);

    const qemu = await startInNs(
      lns,
      'qemu-system-x86_64',
      [
        '-machine',
        'q35,accel=tcg',
        '-m',
        '256',
        '-smp',
        '1',
        '-nodefaults',
        '-no-user-config',
        '-display',
        'none',
        '-serial',
        'stdio',
        '-monitor',
        'none',
        '-no-reboot',
        '-kernel',
        join(GUEST, 'vmlinuz.bzImage'),
        '-initrd',
        join(GUEST, 'initrd.img'),
        '-append',
        `console=ttyS0 quiet kvts.connect=${peer.ip}:7070`,
        '-netdev',
        `tap,id=n0,ifname=${cached.tap},script=no,downscript=no`,
        '-device',
        `virtio-net-pci,netdev=n0,mac=${cached.mac},romfile=`,
      ],
      'KUBEVIRT-TS-GUEST-SENT',
      200_000,
    );
    children.push(qemu.child);
    // The marker can arrive before the rest of its line: wait for the whole line.
    await expect
      .poll(() => qemu.out(), { timeout: 30_000 })
      .toMatch(/KUBEVIRT-TS-GUEST-SENT [^\n]*reply_bytes=\d+\r?\n/);
    const consoleOut = qemu.out();
    expect(consoleOut).toContain(
      binding === 'masquerade'
        ? 'KUBEVIRT-TS-GUEST-NET eth0=10.0.2.2/24 router=10.0.2.1 mtu=1500'
        : `KUBEVIRT-TS-GUEST-NET eth0=${launcher.ip}/24 router=none mtu=1500`,
    );
    expect(consoleOut).toContain('KUBEVIRT-TS-GUEST-LISTENING tcp/8080');
    // Outbound: the guest's 64 KiB reached the peer pod from the launcher's pod IP and came back.
    expect(consoleOut).toContain(`KUBEVIRT-TS-GUEST-SENT bytes=65536 to=${peer.ip}:7070 reply_bytes=65536`);
    await expect.poll(() => peerServer.out()).toContain(`from ${launcher.ip} got 65536`);
    // Inbound: the peer pod reaches the guest's echo server through the launcher's pod IP.
    const echoed = inNs(pns, process.execPath, ['-e', ECHO_CLIENT, launcher.ip, '8080', '200000'], 120_000);
    expect(echoed.trim()).toBe('echoed 200000');
    process.stdout.write(
      `guest (QEMU, tap0, ${binding}, DHCP ${binding === 'masquerade' ? '10.0.2.2' : launcher.ip}): outbound 65536 bytes to ${peer.ip}:7070 seen from ${launcher.ip}, echoed 65536; inbound ${peer.ip} -> ${launcher.ip}:8080 sent 200000, echoed 200000\n`,
    );
  });
});
