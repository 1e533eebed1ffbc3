/**
 * The passt binding on the real one-node cluster, registered by test/cluster/vm-tiny.test.ts
 * after its other network cases (vm-network-cases.ts; same namespace and peer pod).
 *
 * The launcher image's libvirt (Debian 12's 9.0.0) lists no passt interface backend, so
 * the launcher (non-root, 107, in the kubelet's pod network namespace) starts Debian's
 * passt itself and QEMU attaches to its socket with a stream netdev
 * (virt-launcher/passt-process.ts, converter/configurators/passt-qemu.ts). The cluster's
 * pods have no default route: virt-handler's phase 1 gives the pod the dead-end one and
 * the drop table (virt-handler/network/passt-setup.ts). The guest takes passt's DHCP lease
 * (the pod IP), sends bytes to the peer pod (seen there from the pod IP), and the peer
 * reaches the guest's echo through pod IP:8080 (the declared port: without one passt
 * wants a socket per port, more open files than this machine allows).
 */
import { existsSync, readFileSync, readlinkSync } from 'node:fs';
import { expect, it } from 'vitest';
import { processesWith } from '../support/processes';
import { waitFor } from '../support/wait';
import { peerEcho, peerLogOnceGot } from './peer-traffic';
import { type ClusterVmContext, deleteVm, peerOf, startVm, vmManifest } from './vm-network-cases';

const GUEST_PORT = 8080;

/** Registers the passt case; `ctx` is read when it runs. */
export function registerPasstCase(ctx: () => ClusterVmContext): void {
  it('the passt binding on the kubelet pod network: the launcher starts passt, the guest leases the pod IP, TCP both ways', async () => {
    const c = ctx();
    const peer = await peerOf(c);
    const peerIP = peer.status?.podIP ?? '';
    const name = 'vm-passt';
    const vm = await startVm(
      c,
      name,
      vmManifest(
        name,
        c.namespace,
        [{ name: 'default', passtBinding: {}, ports: [{ port: GUEST_PORT }] }],
        [{ name: 'default', pod: {} }],
      ),
    );
    const vmiUid = vm.launcher.metadata?.labels?.['kubevirt.io/created-by'] ?? '';
    const socketTail = `/${vmiUid}/passt.sock`;
    let passtPid = 0;
    try {
      const podIP = vm.launcher.status?.podIP ?? '';
      expect(podIP).toMatch(/^10\.245\.0\.\d+$/);
      // The launcher's passt: one, as the launcher's user (no --runas: it is not root),
      // in the pod's network namespace (QEMU's), on the VMI's socket with the declared port.
      const passt = processesWith(socketTail).filter((p) => p.argv.includes('--one-off'));
      expect(passt).toHaveLength(1);
      passtPid = passt[0].pid;
      expect(passt[0].argv.slice(1)).toEqual([
        '--foreground',
        '--one-off',
        '--socket',
        expect.stringMatching(new RegExp(`${socketTail}$`)),
        '--pid',
        expect.stringMatching(new RegExp(`/${vmiUid}/passt\\.pid$`)),
        '--interface',
        'eth0',
        '--tcp-ports',
        String(GUEST_PORT),
      ]);
      expect(readFileSync(`/proc/${passtPid}/status`, 'utf8')).toMatch(/^Uid:\t107\t107\t107\t107$/m);
      const qemu = processesWith(`"path":"${passt[0].argv[4]}"`).filter((p) => p.argv.includes('-netdev'));
      expect(qemu).toHaveLength(1);
      expect(readlinkSync(`/proc/${passtPid}/ns/net`)).toBe(readlinkSync(`/proc/${qemu[0].pid}/ns/net`));
      // Unprivileged, it sandboxed itself: a user and a mount namespace of its own, no capabilities.
      for (const ns of ['user', 'mnt'])
        expect(readlinkSync(`/proc/${passtPid}/ns/${ns}`), ns).not.toBe(
          readlinkSync(`/proc/${qemu[0].pid}/ns/${ns}`),
        );
      expect(readFileSync(`/proc/${passtPid}/status`, 'utf8')).toMatch(/^CapEff:\t0{16}$/m);
      // Phase 1: no tap, the dead-end default route and the drop table (the pod has no route out).
      expect(vm.inPod('ip', 'route', 'show', 'default')).toContain('default via 169.254.1.1 dev eth0 onlink');
      expect(vm.inPod('ip', '-o', 'link', 'show')).not.toMatch(/\btap0\b/);
      expect(vm.inPod('nft', 'list', 'table', 'inet', 'kubevirt_passt')).toMatch(
        /oifname "eth0" ip daddr != 10\.245\.0\.0\/\d+ (counter packets \d+ bytes \d+ )?drop/,
      );
      // passt's DHCP gave the guest the pod IP.
      const out = await vm.con.waitFor(/KUBEVIRT-TS-GUEST-LISTENING tcp\/8080/, 180_000);
      expect(out).toContain(`KUBEVIRT-TS-GUEST-NET eth0=${podIP}/24 router=169.254.1.1`);
      // The guest to the peer; in the background: busybox nc waits for a close this passt
      // does not pass on (test/e2e/network-passt-local.test.ts). The peer counts the bytes.
      await vm.con.run(
        `(dd if=/dev/zero bs=1024 count=64 2>/dev/null | nc -w 10 ${peerIP} ${c.peerPort} >/dev/null) >/dev/null 2>&1 & true`,
        30_000,
      );
      const seen = await peerLogOnceGot(c.kubectl, c.namespace, podIP, 65536, 60_000);
      expect(seen).toContain(`from ${podIP} got 65536`);
      // The peer to the guest's echo through the pod IP and the forwarded port.
      const fromPeer = peerEcho(c.kubectl, c.namespace, podIP, GUEST_PORT, 200000);
      expect(fromPeer.trim()).toBe('echoed 200000');
      const vmi = await vm.readVmi();
      expect(vmi.status?.interfaces?.[0]).toMatchObject({ name: 'default', ipAddress: podIP });
      process.stdout.write(
        `cluster VM ${name} (passt started by the launcher, pid ${passtPid}, uid 107): lease ${podIP}/24 router 169.254.1.1; ` +
          `guest ${podIP} -> ${peerIP}:${c.peerPort} sent 65536 (seen there from ${podIP}); ` +
          `${peerIP} -> ${podIP}:${GUEST_PORT} sent 200000 echoed 200000\n`,
      );
    } finally {
      vm.con.close();
    }
    await deleteVm(c, name);
    // No passt left: none on the VMI's socket, its pid gone.
    await waitFor('passt to be gone', () => processesWith(socketTail).length === 0, 30_000, 500);
    expect(existsSync(`/proc/${passtPid}`)).toBe(false);
  }, 600_000);
}
