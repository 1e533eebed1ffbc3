/**
 * The passt binding's phase 1 in a real pod namespace (from the CNI plugins): upstream's
 * sysctls for passt, no tap or bridge, a cache entry that keeps our DHCP server out of the
 * way (passt answers the guest). And the reason the binding carries no traffic in local
 * mode yet, asserted so that it shows when it changes: Debian 12's passt refuses a
 * namespace without a default route (local mode's pods have none by design), and
 * libvirt 9.0 passes passt no --gateway to make up for it.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import { netnsName, PodNetwork } from '../../../../src/controllers/local/pod-runtime/pod-network';
import { setUpPodNetwork } from '../../../../src/controllers/virt-handler/network/pod-nic-setup';
import { dhcpBindings } from '../../../../src/controllers/virt-launcher/dhcp/bindings';
import { canTestNetworking, scopedSnapshot } from '../../../support/net-snapshot';
import { inNs } from '../../../support/netns-process';

describe.skipIf(!canTestNetworking())('passt binding phase 1 (real pod namespace)', () => {
  const tag = process.pid % 10000;
  const bridge = `kvtsp${tag}`;
  const uid = `abab${tag.toString(16).padStart(4, '0')}-0000-4000-8000-000000000001`;
  let root: string;
  let net: PodNetwork;
  let before: ReturnType<typeof scopedSnapshot>;
  const vmi = {
    metadata: { name: 'vmp', namespace: 'default', uid: '31111111-2222-4333-8444-555555555555' },
    spec: {
      domain: { devices: { interfaces: [{ name: 'default', passtBinding: {} }] } },
      networks: [{ name: 'default', pod: {} }],
    },
  } as VirtualMachineInstance;

  beforeAll(() => {
    before = scopedSnapshot([netnsName(uid)], bridge);
    root = mkdtempSync(join(tmpdir(), 'kvts-passt-'));
    net = new PodNetwork({
      bridge,
      subnet: '10.244.87.0/24',
      pluginDir: '/usr/lib/cni',
      dataDir: join(root, 'cni'),
    });
    for (const d of ['pod', 'sockets']) mkdirSync(join(root, d));
  });

  afterAll(async () => {
    await net.tearDown(uid, join(root, 'pod')).catch(() => undefined);
    try {
      execFileSync('ip', ['link', 'del', bridge], { stdio: 'ignore' });
    } catch {
      // not made
    }
    rmSync(root, { recursive: true, force: true });
    expect(scopedSnapshot([netnsName(uid)], bridge)).toEqual(before);
  });

  it('sets passt up without a tap, and shows why passt cannot run in a local-mode pod yet', async () => {
    const pod = await net.setUp(uid, join(root, 'pod'));
    const ns = netnsName(uid);
    const cache = await setUpPodNetwork(vmi, { netns: pod.netns, socketDir: join(root, 'sockets') });
    expect(cache).toEqual([
      expect.objectContaining({ binding: 'passt', tap: '', guestIP: pod.ip, podIP: pod.ip, mtu: 1500 }),
    ]);
    expect(dhcpBindings({ interfaces: cache })).toEqual([]);
    expect(inNs(ns, 'sysctl', ['-n', 'net.ipv4.ping_group_range']).trim().split(/\s+/)).toEqual([
      '107',
      '107',
    ]);
    expect(inNs(ns, 'sysctl', ['-n', 'net.ipv4.ip_unprivileged_port_start']).trim()).toBe('0');
    const links = inNs(ns, 'ip', ['-br', 'link'])
      .split('\n')
      .filter(Boolean)
      .map((l) => l.split(/[\s@]/)[0]);
    expect(links.sort()).toEqual(['eth0', 'lo']);

    // passt as libvirt 9.0 starts it for <source dev="eth0"/> (foreground here, bounded).
    const passt = spawnSync(
      'nsenter',
      [
        `--net=/run/netns/${ns}`,
        '--',
        'passt',
        '-f',
        '--interface',
        'eth0',
        '--socket',
        join(root, 'passt.sock'),
      ],
      { encoding: 'utf8', timeout: 10_000 },
    );
    expect(`${passt.stdout}${passt.stderr}`).toContain('External interface not usable');
    expect(passt.status).not.toBe(0);
  });
});
