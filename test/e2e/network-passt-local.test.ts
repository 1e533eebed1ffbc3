/**
 * The passt binding in local mode end to end: `LocalNode` with examples/vm-tiny-net.yaml
 * given a passtBinding interface (port 8080 declared). Phase 1 gives the launcher pod the
 * default route that goes nowhere (passt-setup.ts). This host's libvirt (Debian 12's 9.0.0)
 * lists no passt interface backend in its domain capabilities, so the launcher starts
 * Debian's passt itself in the pod's namespace (virt-launcher/passt-process.ts) and the
 * domain attaches QEMU to its socket through `<qemu:commandline>`; the test checks that
 * path ran (passt's and QEMU's command lines). The tiny guest takes passt's DHCP lease
 * (the pod IP). Real TCP: the guest sends 64 KiB to a server in another pod (seen there
 * from the launcher's pod IP), and that pod reaches the guest's echo server through the
 * pod IP and the forwarded port. Deleting the VM leaves no passt process, no namespace.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import { CONSOLE_SOCKET } from '../../src/controllers/launcher-protocol/paths';
import { shortDir } from '../../src/controllers/launcher-protocol/short-dir';
import { netnsName } from '../../src/controllers/local/pod-runtime/pod-network';
import { VirtualMachineInstanceType, VirtualMachineType } from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { SerialConsole } from '../support/guest';
import { LocalNetworkRun } from '../support/local-network-e2e';
import { canTestNetworking, netSnapshot, networkGuestDir } from '../support/net-snapshot';
import { ECHO_CLIENT, inNs } from '../support/netns-process';
import { processesWith } from '../support/processes';
import { cliBuilt, e2eRun, waitFor } from './node-harness';

const guest = networkGuestDir();
const run = e2eRun('the passt binding in local mode', () =>
  !canTestNetworking()
    ? 'needs root and /usr/lib/cni (containernetworking-plugins)'
    : !cliBuilt()
      ? 'npm run build first'
      : !guest
        ? 'no tiny guest of recipe 7 or later (networking): run scripts/guest/build.sh'
        : undefined,
);

describe.runIf(run)('passt binding in local mode (the launcher starts passt, real guest)', () => {
  const t = new LocalNetworkRun('kvtsh', '10.244.95.0/24', `pst-${process.pid}`);

  beforeAll(() => t.start(guest ?? ''), 60_000);
  afterAll(() => t.tearDown(), 120_000);

  it('boots with passt, takes its DHCP lease and carries TCP both ways', { timeout: 400_000 }, async () => {
    const peerIP = await t.startPeer(7070);
    await t.applyTinyNetVm(`${peerIP}:7070`, (spec) => {
      spec.domain.devices.interfaces = [{ name: 'default', passtBinding: {}, ports: [{ port: 8080 }] }];
      spec.networks = [{ name: 'default', pod: {} }];
    });
    const pod = await t.launcherPod();
    const podIP = pod.status?.podIP ?? '';
    expect(podIP.startsWith('10.244.95.')).toBe(true);
    const vmi = await waitFor(
      'VMI Running with its interface status',
      async () => {
        const v = await t.node.store.get<VirtualMachineInstance & KubeObject>(
          VirtualMachineInstanceType,
          t.name,
          'default',
        );
        return v.status?.phase === 'Running' && v.status?.interfaces?.[0]?.ipAddress ? v : undefined;
      },
      240_000,
    );
    // The fallback ran: the launcher's passt on the VMI's socket, QEMU's stream netdev on it.
    const socketTail = `/${vmi.metadata?.uid}/passt.sock`;
    const passt = processesWith(socketTail).filter((p) => p.argv.includes('--one-off'));
    expect(passt).toHaveLength(1);
    expect(passt[0].argv.slice(1)).toEqual([
      '--foreground',
      '--one-off',
      '--socket',
      expect.stringMatching(new RegExp(`${socketTail}$`)),
      '--pid',
      expect.stringMatching(new RegExp(`/${vmi.metadata?.uid}/passt\\.pid$`)),
      '--interface',
      'eth0',
      '--tcp-ports',
      '8080',
      '--runas',
      // passt splits UID:GID in its own argv (at the colon), which /proc then shows as two.
      '107',
      '107',
    ]);
    const socket = passt[0].argv[4];
    expect(existsSync(socket)).toBe(true);
    const qemu = processesWith(`"path":"${socket}"`).filter((p) => p.argv.includes('-netdev'));
    expect(qemu).toHaveLength(1);
    expect(qemu[0].argv).toContain(
      `{"type":"stream","id":"netua-default","server":false,"addr":{"type":"unix","path":"${socket}"}}`,
    );
    expect(readFileSync(`/proc/${passt[0].pid}/status`, 'utf8')).toMatch(/^Uid:\s+107\s/m);

    const console_ = await SerialConsole.connect(join(shortDir(t.socketsOf(pod)), CONSOLE_SOCKET), 60_000);
    try {
      // passt's lease; the SENT line is not awaited (busybox nc waits for a close this passt
      // does not pass on), the peer counts the bytes instead.
      const out = await console_.waitFor(/KUBEVIRT-TS-GUEST-LISTENING[^\n]*\n/, 240_000);
      expect(out).toContain(`KUBEVIRT-TS-GUEST-NET eth0=${podIP}/24 router=169.254.1.1`);
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
    expect(vmi.spec.domain.devices.interfaces).toEqual([
      { name: 'default', passtBinding: {}, ports: [{ port: 8080 }] },
    ]);
    expect(iface?.mac).toMatch(/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/);
    process.stdout.write(
      `local mode VM ${t.name} (passt started by the launcher, pid ${passt[0].pid}): pod IP ${podIP}, guest ${podIP} -> ${peerIP}:7070 sent 65536 (seen there from ${podIP}); ${peerIP} -> ${podIP}:8080 sent 200000 echoed 200000\n`,
    );

    // Deleting the VM stops passt and removes the pod's namespace.
    await t.node.store.delete(VirtualMachineType, t.name, { namespace: 'default' });
    const ns = netnsName(pod.metadata?.uid ?? '');
    t.launcherNs = ns;
    await waitFor('the launcher pod namespace to go', () => !netSnapshot().netns.includes(ns), 120_000);
    await waitFor('passt to be gone', () => processesWith(socketTail).length === 0, 30_000);
    expect(existsSync(`/proc/${passt[0].pid}`)).toBe(false);
    expect(existsSync(socket)).toBe(false);
  });
});
