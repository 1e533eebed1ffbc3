/**
 * A secondary (multus) bridge network end to end, without QEMU: a NetworkAttachmentDefinition
 * (the CNI bridge plugin on a bridge the test makes, its own subnet by host-local, no
 * gateway) in an embedded store; the launcher pod's networks annotation rendered as
 * virt-controller renders it; the pod runtime's code reads it and attaches the network as
 * `pod<hash>` next to eth0; phase 1 binds eth0 with masquerade and the secondary interface
 * with the bridge binding; a stand-in guest (a namespace whose eth0 and eth1 are veth ports
 * of the two in-pod bridges with the guest MACs) takes both leases from the launcher's DHCP
 * server with busybox's udhcpc. Real TCP between the guest's second interface and the host
 * side of that bridge, both ways. Teardown leaves no namespace, port or bridge.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import {
  MULTUS_NETWORKS_ANNOTATION,
  multusNetworksAnnotation,
  secondaryLinkNames,
} from '../../../../src/controllers/common/multus';
import type { Pod } from '../../../../src/controllers/common/pod';
import { netnsName, PodNetwork } from '../../../../src/controllers/local/pod-runtime/pod-network';
import { secondaryAttachments } from '../../../../src/controllers/local/pod-runtime/secondary-networks';
import { EmbeddedStore } from '../../../../src/controllers/runtime/embedded/store';
import { NetworkAttachmentDefinitionType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { setUpPodNetwork } from '../../../../src/controllers/virt-handler/network/pod-nic-setup';
import { canTestNetworking, scopedSnapshot } from '../../../support/net-snapshot';
import { ECHO_CLIENT, ECHO_SERVER, inNs, startInNs } from '../../../support/netns-process';

const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: 'utf8' });

describe.skipIf(!canTestNetworking())('secondary bridge network from a NetworkAttachmentDefinition', () => {
  const tag = process.pid % 10000;
  const podBridge = `kvtsw${tag}`;
  const blueBridge = `kvtsn${tag}`;
  const guestNs = `kvts-mguest-${tag}`;
  const blueSubnet = '10.250.91';
  const launcherUid = `abab${tag.toString(16).padStart(4, '0')}-0000-4000-8000-000000000001`;
  const children: ChildProcess[] = [];
  let root: string;
  let net: PodNetwork;
  let store: EmbeddedStore;
  let before: unknown[];
  const snapshot = () => [
    scopedSnapshot([netnsName(launcherUid), guestNs], podBridge),
    scopedSnapshot([], blueBridge),
  ];

  const vmi = {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'vm-multi', namespace: 'default', uid: '31111111-2222-4333-8444-555555555555' },
    spec: {
      domain: {
        devices: {
          interfaces: [
            { name: 'default', masquerade: {} },
            { name: 'blue', bridge: {}, macAddress: '02:4b:56:00:00:07' },
          ],
        },
      },
      networks: [
        { name: 'default', pod: {} },
        { name: 'blue', multus: { networkName: 'blue-net' } },
      ],
    },
  } as VirtualMachineInstance;

  beforeAll(async () => {
    before = snapshot();
    root = mkdtempSync(join(tmpdir(), 'kvts-mul-'));
    for (const d of ['launcher', 'sockets']) mkdirSync(join(root, d));
    net = new PodNetwork({
      bridge: podBridge,
      subnet: '10.244.91.0/24',
      pluginDir: '/usr/lib/cni',
      dataDir: join(root, 'cni'),
    });
    // The host side of the secondary network: a bridge with an address, nothing routed beyond it.
    run('ip', ['link', 'add', blueBridge, 'type', 'bridge']);
    run('ip', ['addr', 'add', `${blueSubnet}.1/24`, 'dev', blueBridge]);
    run('ip', ['link', 'set', blueBridge, 'up']);
    store = await EmbeddedStore.open({});
  });

  afterAll(async () => {
    for (const c of children) c.kill('SIGKILL');
    await net.tearDown(launcherUid, join(root, 'launcher')).catch(() => undefined);
    for (const args of [
      ['netns', 'del', guestNs],
      ['link', 'del', podBridge],
      ['link', 'del', blueBridge],
    ]) {
      try {
        execFileSync('ip', args, { stdio: 'ignore' });
      } catch {
        // not made
      }
    }
    await store.close();
    // CNI DEL released the secondary address (host-local keeps one file per lease).
    expect(readdirSync(join(root, 'cni-blue', 'blue-net')).filter((f) => f.startsWith('10.'))).toEqual([]);
    rmSync(root, { recursive: true, force: true });
    expect(snapshot()).toEqual(before);
  });

  it('gives the guest a second interface with an address on that network, reachable from its host side', async () => {
    await store.create(NetworkAttachmentDefinitionType, {
      apiVersion: 'k8s.cni.cncf.io/v1',
      kind: 'NetworkAttachmentDefinition',
      metadata: { name: 'blue-net', namespace: 'default' },
      spec: {
        config: JSON.stringify({
          cniVersion: '0.3.1',
          name: 'blue-net',
          plugins: [
            {
              type: 'bridge',
              bridge: blueBridge,
              isGateway: false,
              ipMasq: false,
              ipam: {
                type: 'host-local',
                ranges: [
                  [
                    {
                      subnet: `${blueSubnet}.0/24`,
                      rangeStart: `${blueSubnet}.10`,
                      rangeEnd: `${blueSubnet}.20`,
                    },
                  ],
                ],
                dataDir: join(root, 'cni-blue'),
              },
            },
          ],
        }),
      },
    } as KubeObject);
    const annotation = multusNetworksAnnotation(vmi) ?? '';
    const pod = {
      metadata: {
        name: 'virt-launcher-vm-multi-x',
        namespace: 'default',
        uid: launcherUid,
        annotations: { [MULTUS_NETWORKS_ANNOTATION]: annotation },
      },
    } as Pod;
    const attachments = await secondaryAttachments(pod, store);
    const blue = secondaryLinkNames('blue');
    expect(attachments.map((a) => [a.network, a.ifName, a.config.type])).toEqual([
      ['default/blue-net', blue.podIf, 'bridge'],
    ]);
    const launcher = await net.setUp(launcherUid, join(root, 'launcher'), attachments);
    const lns = netnsName(launcherUid);
    expect(launcher.secondary?.map((s) => [s.ifName, s.cidr])).toEqual([[blue.podIf, `${blueSubnet}.10/24`]]);
    expect(inNs(lns, 'ip', ['-4', '-br', 'addr', 'show', blue.podIf])).toContain(`${blueSubnet}.10/24`);

    const cached = await setUpPodNetwork(vmi, { netns: launcher.netns, socketDir: join(root, 'sockets') });
    expect(cached.map((c) => [c.name, c.binding, c.tap, c.bridge, c.guestIP, c.serverIP])).toEqual([
      ['default', 'masquerade', 'tap0', 'k6t-eth0', '10.0.2.2', '10.0.2.1'],
      ['blue', 'bridge', blue.tap, blue.bridge, `${blueSubnet}.10`, '169.254.75.11'],
    ]);
    expect(cached[1]).toMatchObject({ mac: '02:4b:56:00:00:07', prefixLength: 24, podInterface: blue.podIf });
    expect(cached[1].gateway).toBeUndefined();
    // The secondary interface's address moved off the pod; its port and the tap are on k6t-<hash>.
    expect(inNs(lns, 'ip', ['-4', '-br', 'addr'])).not.toContain(`${blueSubnet}.10`);
    expect(inNs(lns, 'ip', ['-d', 'link', 'show', blue.podPort])).toMatch(
      new RegExp(`master ${blue.bridge}`),
    );
    expect(inNs(lns, 'ip', ['-d', 'link', 'show', blue.tap])).toMatch(new RegExp(`master ${blue.bridge}`));
    expect(inNs(lns, 'ip', ['-4', 'route', 'show', 'default'])).toBe('');
    // A second run changes nothing.
    expect(await setUpPodNetwork(vmi, { netns: launcher.netns, socketDir: join(root, 'sockets') })).toEqual(
      cached,
    );

    // The stand-in guest: eth0 on k6t-eth0, eth1 on the secondary network's bridge.
    run('ip', ['netns', 'add', guestNs]);
    inNs(guestNs, 'ip', ['link', 'set', 'lo', 'up']);
    for (const [i, c] of cached.entries()) {
      inNs(lns, 'ip', [
        'link',
        'add',
        `gport${i}`,
        'type',
        'veth',
        'peer',
        'name',
        `geth${i}`,
        'netns',
        `/run/netns/${guestNs}`,
      ]);
      inNs(lns, 'ip', ['link', 'set', `gport${i}`, 'master', c.bridge, 'up']);
      inNs(guestNs, 'ip', ['link', 'set', `geth${i}`, 'name', `eth${i}`, 'address', c.mac]);
      inNs(guestNs, 'ip', ['link', 'set', `eth${i}`, 'up']);
    }
    const dhcp = await startInNs(
      lns,
      process.execPath,
      ['--import', 'tsx', 'test/support/dhcp-server-main.ts', join(root, 'sockets')],
      'ready',
    );
    children.push(dhcp.child);
    const script = join(root, 'udhcpc.sh');
    writeFileSync(
      script,
      '#!/bin/sh\n[ "$1" = bound ] || exit 0\nip addr add "$ip/$mask" dev "$interface"\necho "lease $ip/$mask router=$router serverid=$serverid mtu=$mtu" > "$(dirname "$0")/lease-$interface.txt"\n',
    );
    chmodSync(script, 0o755);
    for (const dev of ['eth0', 'eth1'])
      inNs(guestNs, 'busybox', ['udhcpc', '-i', dev, '-n', '-q', '-f', '-t', '5', '-T', '1', '-s', script]);
    expect(readFileSync(join(root, 'lease-eth0.txt'), 'utf8')).toBe(
      'lease 10.0.2.2/24 router=10.0.2.1 serverid=10.0.2.1 mtu=1500\n',
    );
    expect(readFileSync(join(root, 'lease-eth1.txt'), 'utf8')).toBe(
      `lease ${blueSubnet}.10/24 router= serverid=169.254.75.11 mtu=1500\n`,
    );

    // Host side -> guest's second interface: 100000 bytes echoed, seen from the host's address.
    const guestServer = await startInNs(guestNs, process.execPath, ['-e', ECHO_SERVER, '8080'], 'ready');
    children.push(guestServer.child);
    const inbound = execFileSync(
      process.execPath,
      ['-e', ECHO_CLIENT, `${blueSubnet}.10`, '8080', '100000'],
      {
        encoding: 'utf8',
        timeout: 20_000,
      },
    );
    expect(inbound.trim()).toBe('echoed 100000');
    await expect.poll(() => guestServer.out()).toContain(`from ${blueSubnet}.1 got 100000`);
    // Guest -> host side: 50000 bytes from the guest's secondary address.
    const hostServer = execFileSync('mktemp', [], { encoding: 'utf8' }).trim();
    const server = await new Promise<ChildProcess>((resolve) => {
      const c = spawn(
        process.execPath,
        ['-e', ECHO_SERVER.replace("'0.0.0.0'", `'${blueSubnet}.1'`), '7071'],
        {
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      );
      let out = '';
      c.stdout?.on('data', (d) => {
        out += d;
        writeFileSync(hostServer, out);
        if (out.includes('ready')) resolve(c);
      });
    });
    children.push(server);
    const outbound = inNs(guestNs, process.execPath, ['-e', ECHO_CLIENT, `${blueSubnet}.1`, '7071', '50000']);
    expect(outbound.trim()).toBe('echoed 50000');
    await expect.poll(() => readFileSync(hostServer, 'utf8')).toContain(`from ${blueSubnet}.10 got 50000`);
    rmSync(hostServer, { force: true });
    process.stdout.write(
      `secondary network ${blueBridge} (${blueSubnet}.0/24): guest eth1 leased ${blueSubnet}.10 from 169.254.75.11; host ${blueSubnet}.1 -> guest:8080 echoed 100000; guest -> host:7071 echoed 50000\n`,
    );
    for (const c of children.splice(0)) c.kill('SIGTERM');
  });
});
