/**
 * The passt binding in local mode end to end: `LocalNode` with examples/vm-tiny-net.yaml
 * given a passtBinding interface (port 8080 declared). Phase 1 gives the launcher pod the
 * default route that goes nowhere (passt-setup.ts), the launcher's own virtqemud starts
 * passt for the domain's `<interface type="user"><backend type="passt"/>`, and the tiny
 * guest takes passt's DHCP lease (the pod IP). Real TCP: the guest sends 64 KiB to a
 * server in another pod (seen there from the launcher's pod IP), and that pod reaches the
 * guest's echo server through the pod IP and the forwarded port.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import { applyObjects, loadAndAdmit } from '../../src/cli/local/apply';
import { ImageStore } from '../../src/cli/local/images';
import { LocalNode } from '../../src/cli/local/local-node';
import { statePaths } from '../../src/cli/local/state-dir';
import type { Pod } from '../../src/controllers/common/pod';
import { podEmptyDirPath } from '../../src/controllers/launcher-protocol/paths';
import { netnsName, PodNetwork } from '../../src/controllers/local/pod-runtime/pod-network';
import {
  PodType,
  VirtualMachineInstanceType,
  VirtualMachineType,
} from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { CONSOLE_SOCKET } from '../../src/controllers/virt-launcher/domain-report';
import { shortDir } from '../../src/controllers/virt-launcher/short-dir';
import { SerialConsole } from '../support/guest';
import { canTestNetworking, netSnapshot, networkGuestDir, scopedSnapshot } from '../support/net-snapshot';
import {
  ECHO_CLIENT,
  ECHO_SERVER,
  inNs,
  type NsProcess,
  repoRoot,
  startInNs,
} from '../support/netns-process';
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

// Skipped: Debian 12's libvirt 9.0.0 refuses the domain at define ("XML error: Invalid
// value for attribute 'type' in element 'backend': 'passt'", asserted in
// test/controllers/virt-handler/network/passt.test.ts), so the launcher cannot start it.
// Waits (issue 16) for a libvirt that parses <backend type="passt"/> (upstream libvirt >= 9.0 documents it).
const libvirtTakesPasst = false;
describe.runIf(run && libvirtTakesPasst)(
  'passt binding in local mode (libvirt starts passt, real guest)',
  () => {
    const tag = process.pid % 10000;
    const bridge = `kvtsh${tag}`;
    const subnet = '10.244.95.0/24';
    const name = `pst-${process.pid}`;
    let state: string;
    let node: LocalNode;
    let peerNet: PodNetwork;
    const peerUid = `eeee${tag.toString(16).padStart(4, '0')}-0000-4000-8000-000000000002`;
    let peerServer: NsProcess | undefined;
    let before: ReturnType<typeof scopedSnapshot>;
    let launcherNs = '';

    beforeAll(async () => {
      before = scopedSnapshot([], bridge);
      state = mkdtempSync(join(tmpdir(), 'kvts-pst-'));
      chmodSync(state, 0o755);
      const paths = statePaths(state);
      node = new LocalNode({
        paths,
        podNetwork: { subnet, bridge },
        log: process.env.KUBEVIRT_TS_NODE_LOG ? (c, m) => console.log(`${c}: ${m}`) : undefined,
      });
      await node.start();
      new ImageStore(paths.images).import('kubevirt-ts/tiny-guest', guest ?? '');
      // The other pod: a namespace on the same bridge and IPAM as local mode's pods.
      peerNet = new PodNetwork({ bridge, subnet, pluginDir: '/usr/lib/cni', dataDir: join(state, 'cni') });
      mkdirSync(join(state, 'peer'));
    }, 60_000);

    afterAll(async () => {
      peerServer?.child.kill('SIGKILL');
      // A VM the test did not get to delete: delete it and let its pod go (guests outlive `up`).
      await node?.store.delete(VirtualMachineType, name, { namespace: 'default' }).catch(() => undefined);
      await waitFor(
        'launcher pods to go',
        async () => (await node.store.list(PodType, { namespace: 'default' })).items.length === 0,
        90_000,
      ).catch(() => undefined);
      await peerNet?.tearDown(peerUid, join(state, 'peer')).catch(() => undefined);
      await node?.stop();
      await new Promise((r) => setTimeout(r, 500));
      try {
        (await import('node:child_process')).execFileSync('ip', ['link', 'del', bridge], { stdio: 'ignore' });
      } catch {
        // never made
      }
      rmSync(state, { recursive: true, force: true });
      expect(scopedSnapshot([launcherNs, netnsName(peerUid)], bridge)).toEqual(before);
    }, 120_000);

    it('boots with a network, takes its DHCP lease and carries TCP both ways', {
      timeout: 400_000,
    }, async () => {
      const peer = await peerNet.setUp(peerUid, join(state, 'peer'));
      peerServer = await startInNs(
        netnsName(peerUid),
        process.execPath,
        ['-e', ECHO_SERVER, '7070'],
        'ready',
      );

      // examples/vm-tiny-net.yaml: no interfaces given, so the VMI gets local mode's default
      // (masquerade on the pod network, all ports forwarded); the guest also sends to the peer.
      const vm = parse(readFileSync(join(repoRoot, 'examples', 'vm-tiny-net.yaml'), 'utf8'));
      vm.metadata.name = name;
      vm.spec.template.metadata.labels['kubevirt.io/vm'] = name;
      vm.spec.template.spec.terminationGracePeriodSeconds = 5;
      vm.spec.template.spec.domain.firmware.kernelBoot.kernelArgs += ` kvts.connect=${peer.ip}:7070`;
      vm.spec.template.spec.domain.devices.interfaces = [
        { name: 'default', passtBinding: {}, ports: [{ port: 8080 }] },
      ];
      vm.spec.template.spec.networks = [{ name: 'default', pod: {} }];
      const file = join(state, 'vm.yaml');
      writeFileSync(file, stringify(vm));
      const objects = await loadAndAdmit([file], new ImageStore(statePaths(state).images), true);
      await applyObjects(node.store, objects);

      const pod = await waitFor(
        'the launcher pod with its pod IP',
        async () => {
          const pods = await node.store.list<Pod & KubeObject>(PodType, { namespace: 'default' });
          return pods.items.find((p) => p.metadata?.name?.includes(name) && p.status?.podIP);
        },
        120_000,
      );
      const podIP = pod.status?.podIP ?? '';
      expect(podIP.startsWith('10.244.95.')).toBe(true);
      const sockets = podEmptyDirPath(statePaths(state).pods, pod.metadata?.uid ?? '', 'sockets');
      const vmi = await waitFor(
        'VMI Running with its interface status',
        async () => {
          const v = await node.store.get<VirtualMachineInstance & KubeObject>(
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
        // passt's lease; the SENT line is not awaited (busybox nc waits for a close this passt
        // does not pass on), the peer counts the bytes instead.
        const out = await console_.waitFor(/KUBEVIRT-TS-GUEST-LISTENING[^\n]*\n/, 240_000);
        expect(out).toContain(`KUBEVIRT-TS-GUEST-NET eth0=${podIP}/24 router=169.254.1.1`);
      } finally {
        console_.close();
      }
      await waitFor(
        'the peer to count the bytes',
        () => peerServer?.out().includes(`from ${podIP} got 65536`),
        30_000,
      );
      const echoed = inNs(
        netnsName(peerUid),
        process.execPath,
        ['-e', ECHO_CLIENT, podIP, '8080', '200000'],
        120_000,
      );
      expect(echoed.trim()).toBe('echoed 200000');
      const iface = vmi.status?.interfaces?.[0];
      expect(iface).toMatchObject({ name: 'default', ipAddress: podIP });
      expect(vmi.spec.domain.devices.interfaces).toEqual([
        { name: 'default', passtBinding: {}, ports: [{ port: 8080 }] },
      ]);
      expect(iface?.mac).toMatch(/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/);
      process.stdout.write(
        `local mode VM ${name} (passt): pod IP ${podIP}, guest ${podIP} -> ${peer.ip}:7070 sent 65536 (seen there from ${podIP}); ${peer.ip} -> ${podIP}:8080 sent 200000 echoed 200000\n`,
      );

      // Deleting the VM removes the pod's namespace.
      await node.store.delete(VirtualMachineType, name, { namespace: 'default' });
      const ns = netnsName(pod.metadata?.uid ?? '');
      launcherNs = ns;
      await waitFor('the launcher pod namespace to go', () => !netSnapshot().netns.includes(ns), 120_000);
    });
  },
);
