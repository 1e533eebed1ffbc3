/**
 * Issue 14's end-to-end run on the real one-node cluster: the components (virt-controller,
 * virt-handler) run as pods from the project's images, installed with `kubectl apply -f`
 * of the manifests in the default rendering (on the pod network, reaching the API server
 * through the `kubernetes` Service the cluster's kube-proxy serves); a VM booting the tiny guest from its
 * containerDisk image gets a launcher pod the kubelet starts (unprivileged, user 107, its
 * own libvirtd and QEMU inside the pod's cgroup), its serial console shows the boot
 * marker, and `virtctl stop` stops it. Guests use TCG here (useEmulation), so the launcher
 * pod requests no /dev/kvm and gets none; the Node's devices.kubevirt.io/kvm comes from
 * virt-handler's device plugin through the kubelet.
 *
 * Issue 16 on the cluster: the VM's interface is on the pod network with the masquerade
 * binding. virt-handler finds the launcher's compute container process through the host's
 * /proc and sets up k6t-eth0/tap0/NAT in its network namespace; the guest gets 10.0.2.2 by
 * DHCP, reaches an echo server in another pod by its pod IP (seen there from the launcher
 * pod's IP) and serves an echo on its declared port 8080 that the other pod reaches
 * through the launcher pod's IP; a connection held open survives a new virt-handler pod.
 * Then the bridge binding and a Multus secondary network (vm-network-cases.ts) and the
 * passt binding with the launcher's own passt (vm-passt-case.ts).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  type V1Lease,
  type V1Pod,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterInfo } from '../../scripts/cluster/state';
import { repoRoot } from '../../scripts/gen-api';
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import { CONSOLE_SOCKET, podEmptyDirPath } from '../../src/controllers/launcher-protocol/paths';
import { shortDir } from '../../src/controllers/launcher-protocol/short-dir';
import { clusterUnavailableReason, sharedCluster } from '../support/cluster';
import { installComponents } from '../support/cluster-install';
import { createTestNamespace, deleteNamespaceAndWait } from '../support/cluster-namespace';
import { kubectlWith, runPod } from '../support/cluster-pods';
import { SerialConsole } from '../support/guest';
import { acquireHostLocks } from '../support/host-lock';
import { integration } from '../support/integration';
import { ECHO_SERVER } from '../support/netns-process';
import { waitFor } from '../support/wait';
import { expectLauncherIsolation } from './launcher-isolation';
import { peerEcho, peerLogOnceGot } from './peer-traffic';
import { registerAccessCredentialsCase } from './vm-access-credentials-case';
import { registerForceStopCases } from './vm-force-stop-case';
import { registerNetworkCases } from './vm-network-cases';
import { registerPasstCase } from './vm-passt-case';
import { registerProbesCase } from './vm-probes-case';
import { registerRestartCases } from './vm-restarts-case';
import { registerSeccompCase } from './vm-seccomp-case';
import { registerStopCase } from './vm-stop-case';

const why = clusterUnavailableReason();
const enabled = integration('one-node cluster', why === undefined, why ?? '');
const NS = 'cluster-vm-tiny';
const VM = 'vm-tiny-cd';
const MARKER = 'KUBEVIRT-TS-GUEST-BOOTED';
/** The peer pod's echo server port, and the guest's declared one. */
const PEER_PORT = 7070;
const GUEST_PORT = 8080;

describe.skipIf(!enabled)('a VM on the real one-node cluster', () => {
  let info: ClusterInfo;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let dir: string;
  let launcher: V1Pod;
  let podIP: string;
  let peer: V1Pod;
  let qemuPid: number;
  let bootedVmiUid = '';
  let coordination: CoordinationV1Api;
  let kubectl: (...args: string[]) => string;
  const kubeLease = (): Promise<V1Lease> =>
    coordination.readNamespacedLease({ name: 'virt-controller', namespace: 'kubevirt' });
  const launcherImage = () => info.images['virt-launcher'] ?? '';
  const exec = (...cmd: string[]) =>
    kubectl('exec', '-n', NS, launcher.metadata?.name ?? '', '-c', 'compute', '--', ...cmd);
  const readVmi = async () =>
    (await custom.getNamespacedCustomObject({
      group: 'kubevirt.io',
      version: 'v1',
      namespace: NS,
      plural: 'virtualmachineinstances',
      name: VM,
    })) as VirtualMachineInstance;
  /** The guest's console (the launcher's relay socket in the pod's sockets emptyDir). */
  const guestConsole = () =>
    SerialConsole.connect(
      join(
        shortDir(
          podEmptyDirPath(join(info.stateDir, 'kubelet', 'pods'), launcher.metadata?.uid ?? '', 'sockets'),
        ),
        CONSOLE_SOCKET,
      ),
      30_000,
    );

  /** After a disruption: the same QEMU, booted once, the launcher pod untouched, the VMI Running. */
  const expectGuestUnchanged = async (after: string) => {
    expect(readFileSync(`/proc/${qemuPid}/cmdline`, 'utf8'), `QEMU after ${after}`).toContain(
      `guest=${NS}_${VM},`,
    );
    const vmiUid = launcher.metadata?.labels?.['kubevirt.io/created-by'];
    const n = exec('busybox', 'grep', '-c', MARKER, `/var/run/kubevirt-private/${vmiUid}/virt-serial0-log`);
    expect(n.trim(), `boot marker count after ${after}`).toBe('1');
    const pods = (await core.listNamespacedPod({ namespace: NS, labelSelector: 'kubevirt.io=virt-launcher' }))
      .items;
    expect(pods.map((p) => p.metadata?.uid)).toEqual([launcher.metadata?.uid]);
    const compute = pods[0].status?.containerStatuses?.find((c) => c.name === 'compute');
    expect(compute?.restartCount, `compute restarts after ${after}`).toBe(0);
    expect((await readVmi()).status?.phase, `VMI phase after ${after}`).toBe('Running');
  };

  let releaseLocks: (() => void) | undefined;
  beforeAll(async () => {
    info = await sharedCluster();
    // Other files install and remove the components on this cluster too (host-lock.ts).
    releaseLocks = await acquireHostLocks(['cluster-components'], 900_000);
    kubectl = kubectlWith(info.kubeconfigPath);
    const kc = new KubeConfig();
    kc.loadFromFile(info.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    coordination = kc.makeApiClient(CoordinationV1Api);
    dir = mkdtempSync(join(tmpdir(), 'kvts-vm-tiny-'));
    installComponents(info, dir, kubectl);
    await createTestNamespace(core, NS);
  }, 1_200_000);

  afterAll(async () => {
    if (!info) return;
    try {
      // Gone before the components are: its VMs' finalizers need virt-controller.
      await deleteNamespaceAndWait(core, NS, 180_000);
      try {
        kubectl('delete', '--ignore-not-found', '--wait=false', '-f', dir);
      } catch {
        // The run's cluster goes down next anyway.
      }
      rmSync(dir, { recursive: true, force: true });
    } finally {
      releaseLocks?.();
    }
  }, 300_000);

  it('runs virt-controller and virt-handler as pods; the kvm resource comes from the device plugin', async () => {
    const ready = await waitFor(
      'virt-handler and a leading virt-controller Ready',
      async () => {
        const pods = (await core.listNamespacedPod({ namespace: 'kubevirt' })).items;
        const isReady = (p: V1Pod) =>
          p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
        const handler = pods.filter(
          (p) => p.metadata?.labels?.['kubevirt.io'] === 'virt-handler' && isReady(p),
        );
        const ctl = pods.filter(
          (p) => p.metadata?.labels?.['kubevirt.io'] === 'virt-controller' && isReady(p),
        );
        // The default rendering's readiness probe is /leader, which (as upstream's) answers
        // 200 on the standby too: both replicas Ready, one leading.
        return handler.length === 1 && ctl.length === 2 ? { handler: handler[0], ctl } : undefined;
      },
      180_000,
      500,
    );
    // Real containers of the kubelet's containerd, from the project's image.
    for (const s of ready.handler.status?.containerStatuses ?? [])
      expect(s.containerID).toMatch(/^containerd:\/\//);
    expect(ready.handler.spec?.containers.map((c) => c.name).sort()).toEqual([
      'virt-handler',
      'virt-handler-libvirt',
    ]);
    // In the host's PID namespace: it finds launcher processes through /proc.
    expect(ready.handler.spec?.hostPID).toBe(true);
    const node = await waitFor(
      'devices.kubevirt.io/kvm on the Node',
      async () => {
        const n = await core.readNode({ name: info.nodeName });
        return n.status?.capacity?.['devices.kubevirt.io/kvm'] === '1k' ? n : undefined;
      },
      60_000,
      500,
    );
    // The device plugins' 1000 each (the kubelet writes "1k"); the handler writes none itself.
    expect(node.status?.capacity?.['devices.kubevirt.io/tun']).toBe('1k');
    expect(node.status?.capacity?.['devices.kubevirt.io/vhost-net']).toBe('1k');
    expect(node.metadata?.labels?.['kubevirt.io/schedulable']).toBe('true');
  }, 300_000);

  it('boots the tiny guest from its containerDisk in a launcher pod the kubelet started, on the pod network', async () => {
    // The peer pod first: an echo server the guest will reach by its pod IP.
    peer = await runPod(core, {
      namespace: NS,
      name: 'peer',
      image: launcherImage(),
      command: ['node', '-e', ECHO_SERVER, String(PEER_PORT)],
    });
    const vm = readFileSync(join(repoRoot, 'examples', 'vm-tiny-containerdisk.yaml'), 'utf8').replace(
      'namespace: default',
      `namespace: ${NS}`,
    );
    writeFileSync(join(dir, 'vm.yaml'), vm);
    kubectl('apply', '-f', join(dir, 'vm.yaml'));
    const vmi = await waitFor(
      'VMI Running with the pod IP in status.interfaces',
      async () => {
        const v = await readVmi().catch(() => undefined);
        return v?.status?.phase === 'Running' && v.status.interfaces?.[0]?.ipAddress ? v : undefined;
      },
      240_000,
      1_000,
    );
    const pods = (await core.listNamespacedPod({ namespace: NS, labelSelector: 'kubevirt.io=virt-launcher' }))
      .items;
    expect(pods).toHaveLength(1);
    launcher = pods[0];
    podIP = launcher.status?.podIP ?? '';
    expect(podIP).toMatch(/^10\.245\.0\.\d+$/);
    const compute = launcher.spec?.containers.find((c) => c.name === 'compute');
    expect(compute?.securityContext?.privileged).toBe(false);
    expect(compute?.securityContext?.runAsUser).toBe(107);
    // TCG: no KVM requested, so the kubelet gives the pod no /dev/kvm; the pod network's
    // tap needs /dev/net/tun, from the tun device plugin.
    expect(compute?.resources?.requests?.['devices.kubevirt.io/kvm']).toBeUndefined();
    expect(compute?.resources?.limits?.['devices.kubevirt.io/tun']).toBe('1');
    // The containerDisk beside compute, as upstream's; its binary from compute's postStart
    // hook (upstream: an init container, which costs a kubelet PLEG relist).
    expect(launcher.spec?.initContainers).toBeUndefined();
    expect(launcher.spec?.containers.map((c) => c.name)).toEqual(['compute', 'volumeboot']);
    expect(launcher.status?.containerStatuses?.find((s) => s.name === 'volumeboot')?.ready).toBe(true);
    const cid = launcher.status?.containerStatuses?.find((s) => s.name === 'compute')?.containerID ?? '';
    expect(cid).toMatch(/^containerd:\/\/[0-9a-f]{64}$/);

    const devs = exec(
      'busybox',
      'sh',
      '-c',
      'for d in /dev/kvm /dev/net/tun; do test -e $d && echo $d; done',
    );
    expect(devs.trim().split('\n')).toEqual(['/dev/net/tun']);
    const ps = exec('busybox', 'ps', '-o', 'user,comm');
    expect(ps).toMatch(/^qemu +libvirtd$/m);
    expect(ps).toMatch(/^qemu +virtlogd$/m);
    expect(ps).toMatch(/^qemu +qemu-system-x86$/m);

    qemuPid = expectLauncherIsolation({
      info,
      launcher,
      containerId: cid,
      qemuGuest: `${NS}_${VM}`,
      podIP,
      guestPort: GUEST_PORT,
    });

    // The boot marker on the serial console's log file in the launcher pod.
    const vmiUid = launcher.metadata?.labels?.['kubevirt.io/created-by'];
    const log = `/var/run/kubevirt-private/${vmiUid}/virt-serial0-log`;
    const count = await waitFor(
      'boot marker on the serial console',
      () => {
        const n = Number(exec('busybox', 'sh', '-c', `busybox grep -c ${MARKER} ${log} || true`).trim());
        return n > 0 ? n : undefined;
      },
      180_000,
      1_000,
    );
    expect(count).toBe(1);

    // Status: the masquerade interface reports the pod IP (as upstream), kubectl shows it.
    const iface = vmi.status?.interfaces?.[0];
    expect(iface).toMatchObject({ name: 'default', ipAddress: podIP });
    expect(iface?.mac).toMatch(/^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/);
    const row = kubectl('get', 'vmi', '-n', NS, VM).split('\n');
    expect(row[0]).toMatch(/\bIP\b/);
    expect(row[1]).toContain(podIP);
    process.stdout.write(`cluster VMI ${VM}:\n${row.join('\n')}`);

    // kubectl describe shows the boot's events: virt-controller's and virt-handler's.
    bootedVmiUid = vmi.metadata?.uid ?? '';
    const described = kubectl('describe', 'vmi', '-n', NS, VM);
    const events = described.slice(described.indexOf('Events:'));
    for (const [reason, from] of [
      ['SuccessfulCreate', 'virtualmachine-controller|virtualmachineinstance-controller|virt-controller'],
      ['Created', 'virt-handler'],
      ['Started', 'virt-handler'],
    ]) {
      expect(events, `kubectl describe vmi: ${reason} from ${from}`).toMatch(
        new RegExp(`Normal\\s+${reason}\\s+.*\\b(${from})\\b`),
      );
    }
  }, 600_000);

  it('carries real traffic: the guest reaches the peer pod, the peer reaches the guest through the pod IP', async () => {
    expect(launcher, 'the boot test ran').toBeDefined();
    const peerIP = peer.status?.podIP ?? '';
    const con = await guestConsole();
    try {
      // The DHCP lease the launcher's server gave the guest (the relay replays the boot output).
      const out = await con.waitFor(/KUBEVIRT-TS-GUEST-LISTENING tcp\/8080/, 180_000);
      expect(out).toMatch(/KUBEVIRT-TS-GUEST-NET eth0=10\.0\.2\.2\/24 router=10\.0\.2\.1 mtu=1500/);
      const got = await con.run(
        `dd if=/dev/zero bs=1024 count=64 2>/dev/null | nc -w 10 ${peerIP} ${PEER_PORT} | wc -c`,
        120_000,
      );
      expect(got.trim()).toBe('65536');
    } finally {
      con.close();
    }
    // The peer saw the guest's connection come from the launcher pod's IP (the NAT).
    const seen = await peerLogOnceGot(kubectl, NS, podIP, 65536);
    expect(seen).toContain(`from ${podIP} got 65536`);
    const echoed = peerEcho(kubectl, NS, podIP, GUEST_PORT, 200000);
    expect(echoed.trim()).toBe('echoed 200000');
    process.stdout.write(
      `cluster VM ${VM}: guest 10.0.2.2 -> ${peerIP}:${PEER_PORT} sent 65536 echoed 65536 (seen from ${podIP}); ${peerIP} -> ${podIP}:${GUEST_PORT} sent 200000 echoed 200000\n`,
    );
  }, 400_000);

  // A new virt-handler pod and controller leader, then kubelet and containerd restarts,
  // with the guest untouched (vm-restarts-case.ts).
  registerRestartCases(() => ({
    info,
    core,
    kubectl,
    namespace: NS,
    guestPort: GUEST_PORT,
    launcher,
    podIP,
    exec,
    kubeLease,
    expectGuestUnchanged,
  }));

  // virtctl stop, with the stop's events (vm-stop-case.ts).
  registerStopCase(() => ({
    info,
    core,
    custom,
    kubectl,
    namespace: NS,
    vm: VM,
    launcher,
    qemuPid,
    bootedVmiUid,
  }));

  // The bridge binding, a Multus network, passt, accessCredentials and forced stops, after
  // this VM (vm-network-cases.ts, vm-passt-case.ts, vm-access-credentials-case.ts,
  // vm-force-stop-case.ts).
  const networkContext = () => ({
    info,
    core,
    custom,
    kubectl,
    dir,
    namespace: NS,
    peer,
    peerPort: PEER_PORT,
  });
  registerNetworkCases(networkContext);
  registerPasstCase(networkContext);
  registerAccessCredentialsCase(networkContext);
  registerSeccompCase(networkContext);
  registerForceStopCases(networkContext);
  registerProbesCase(networkContext);
});
