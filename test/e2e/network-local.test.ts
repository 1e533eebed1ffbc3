/**
 * VM networking in local mode end to end: `LocalNode` (what `kubevirt-ts up` runs) with its
 * pod network on a test bridge, examples/vm-tiny-net.yaml (no interfaces given: local
 * mode's default, masquerade on the pod network, every port forwarded). The pod runtime gives the launcher pod a namespace (CNI
 * bridge + host-local), the launcher and its own virtqemud and QEMU run in it, the node
 * agent's phase 1 makes k6t-eth0/tap0/NAT, the launcher's DHCP server leases 10.0.2.2 to
 * the tiny guest's udhcpc. Real TCP: the guest sends 64 KiB to a server in another pod's
 * namespace by its pod IP (seen there from the launcher's pod IP) and serves an echo on
 * 8080 that the other pod reaches through the launcher's pod IP. VMI status carries the
 * pod IP and the MAC. Deleting the VM removes the namespace and veth.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import { LocalNode } from '../../src/cli/local/local-node';
import { CONSOLE_SOCKET } from '../../src/controllers/launcher-protocol/paths';
import { shortDir } from '../../src/controllers/launcher-protocol/short-dir';
import { netnsName } from '../../src/controllers/local/pod-runtime/pod-network';
import { VirtualMachineInstanceType, VirtualMachineType } from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { SerialConsole } from '../support/guest';
import { LocalNetworkRun } from '../support/local-network-e2e';
import { canTestNetworking, netSnapshot, networkGuestDir } from '../support/net-snapshot';
import { ECHO_CLIENT, HOLD_CLIENT, inNs, startInNs } from '../support/netns-process';
import { cliBuilt, e2eRun, waitFor } from './node-harness';

const guest = networkGuestDir();
const run = e2eRun('VM networking in local mode', () =>
  !canTestNetworking()
    ? 'needs root and /usr/lib/cni (containernetworking-plugins)'
    : !cliBuilt()
      ? 'npm run build first'
      : !guest
        ? 'no tiny guest of recipe 7 or later (networking): run scripts/guest/build.sh'
        : undefined,
);

describe.runIf(run)('VM networking in local mode (masquerade, real guest)', () => {
  const t = new LocalNetworkRun('kvtse', '10.244.82.0/24', `net-${process.pid}`);
  const name = t.name;

  beforeAll(() => t.start(guest ?? ''), 60_000);
  afterAll(() => t.tearDown(), 120_000);

  it('boots with a network, takes its DHCP lease and carries TCP both ways', {
    timeout: 400_000,
  }, async () => {
    // examples/vm-tiny-net.yaml: no interfaces given, so the VMI gets local mode's default
    // (masquerade on the pod network, all ports forwarded); the guest also sends to the peer.
    const peerIP = await t.startPeer(7070);
    await t.applyTinyNetVm(`${peerIP}:7070`);
    const pod = await t.launcherPod();
    const podIP = pod.status?.podIP ?? '';
    expect(podIP.startsWith('10.244.82.')).toBe(true);
    const sockets = t.socketsOf(pod);
    const vmi = await waitFor(
      'VMI Running with its interface status',
      async () => {
        const v = await t.node.store.get<VirtualMachineInstance & KubeObject>(
          VirtualMachineInstanceType,
          name,
          'default',
        );
        return v.status?.phase === 'Running' && v.status?.interfaces?.[0]?.ipAddress ? v : undefined;
      },
      240_000,
    );
    const console_ = await SerialConsole.connect(join(shortDir(sockets), CONSOLE_SOCKET), 60_000);
    try {
      const out = await console_.waitFor(/KUBEVIRT-TS-GUEST-SENT [^\n]*reply_bytes=\d+\r?\n/, 240_000);
      expect(out).toMatch(/KUBEVIRT-TS-GUEST-NET eth0=10\.0\.2\.2\/24 router=10\.0\.2\.1 mtu=1500/);
      expect(out).toContain(`KUBEVIRT-TS-GUEST-SENT bytes=65536 to=${peerIP}:7070 reply_bytes=65536`);
    } finally {
      console_.close();
    }
    await waitFor(
      'the peer to count the bytes',
      () => t.peerServer?.out().includes(`from ${podIP} got 65536`),
      30_000,
    );
    const echoed = inNs(t.peerNs, process.execPath, ['-e', ECHO_CLIENT, podIP, '8080', '200000'], 120_000);
    expect(echoed.trim()).toBe('echoed 200000');
    const iface = vmi.status?.interfaces?.[0];
    expect(iface).toMatchObject({ name: 'default', ipAddress: podIP });
    expect(vmi.spec.domain.devices.interfaces).toEqual([{ name: 'default', masquerade: {} }]);
    expect(iface?.mac).toMatch(/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/);
    process.stdout.write(
      `local mode VM ${name}: pod IP ${podIP}, MAC ${iface?.mac}, guest 10.0.2.2 -> ${peerIP}:7070 sent 65536 echoed 65536 (seen from ${podIP}); ${peerIP} -> ${podIP}:8080 sent 200000 echoed 200000\n`,
    );

    // A connection held open while the node agent (with the whole of `up`) stops and a
    // new one starts and adopts the launcher: the guest's network is the pod's, untouched.
    const go = join(t.state, 'go');
    const hold = await startInNs(
      t.peerNs,
      process.execPath,
      ['-e', HOLD_CLIENT, podIP, '8080', '4096', go],
      'first 4096',
      120_000,
    );
    await t.node.stop();
    t.node = new LocalNode(t.nodeOptions);
    await t.node.start();
    await waitFor(
      'the new node agent to adopt the launcher (VMI Running, status written again)',
      async () =>
        t.node.handler.isReady() && (await t.node.handler.launcherOf('default', name).catch(() => undefined)),
      120_000,
    );
    writeFileSync(go, '');
    await waitFor('the held connection to finish', () => hold.out().includes('closed'), 60_000);
    expect(hold.out()).toContain('second 8192');
    expect(hold.out()).not.toContain('error');
    process.stdout.write(
      `held connection through a node agent restart: ${hold.out().replace(/\n/g, '; ')}\n`,
    );

    // Deleting the VM removes the pod's namespace.
    await t.node.store.delete(VirtualMachineType, name, { namespace: 'default' });
    const ns = netnsName(pod.metadata?.uid ?? '');
    t.launcherNs = ns;
    await waitFor('the launcher pod namespace to go', () => !netSnapshot().netns.includes(ns), 120_000);
  });
});
