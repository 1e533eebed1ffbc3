/**
 * Issue 14's end-to-end run on the real one-node cluster: the components (virt-controller,
 * virt-handler) run as pods from the project's images, installed with `kubectl apply -f`
 * of the manifests rendered for the dev cluster; a VM booting the tiny guest from its
 * containerDisk image gets a launcher pod the kubelet starts (unprivileged, user 107, its
 * own libvirtd and QEMU inside the pod's cgroup), its serial console shows the boot
 * marker, and `virtctl stop` stops it. Guests use TCG here (useEmulation), so the launcher
 * pod requests no /dev/kvm and gets none; the Node's devices.kubevirt.io/kvm comes from
 * virt-handler's device plugin through the kubelet.
 */
import { execFileSync } from 'node:child_process';
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
import { stringify } from 'yaml';
import { CONTAINERD_BIN } from '../../scripts/cluster/containerd';
import { kubeletBin } from '../../scripts/cluster/kubelet';
import {
  type ClusterInfo,
  clusterPaths,
  daemonPid,
  startDaemon,
  stopDaemon,
} from '../../scripts/cluster/state';
import { repoRoot } from '../../scripts/gen-api';
import { manifestFiles } from '../../scripts/gen-manifests';
import { defaultInstallOptions } from '../../src/controllers/virt-operator/components/index';
import { clusterUnavailableReason, sharedCluster } from '../support/cluster';
import { cacheDir, integration } from '../support/integration';
import { waitFor } from '../support/wait';

const why = clusterUnavailableReason();
const enabled = integration('one-node cluster', why === undefined, why ?? '');
const NS = 'cluster-vm-tiny';
const VM = 'vm-tiny-cd';
const MARKER = 'KUBEVIRT-TS-GUEST-BOOTED';
const kubectlBin = join(cacheDir, 'kube', 'current', 'bin', 'kubectl');

describe.skipIf(!enabled)('a VM on the real one-node cluster', () => {
  let info: ClusterInfo;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let dir: string;
  let launcher: V1Pod;
  let qemuPid: number;
  let coordination: CoordinationV1Api;
  const kubeLease = (): Promise<V1Lease> =>
    coordination.readNamespacedLease({ name: 'virt-controller', namespace: 'kubevirt' });
  const kubectl = (...args: string[]) =>
    execFileSync(kubectlBin, ['--kubeconfig', info.kubeconfigPath, ...args], { encoding: 'utf8' });

  beforeAll(async () => {
    info = await sharedCluster();
    const kc = new KubeConfig();
    kc.loadFromFile(info.kubeconfigPath);
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);
    coordination = kc.makeApiClient(CoordinationV1Api);
    dir = mkdtempSync(join(tmpdir(), 'kvts-vm-tiny-'));
    const opts = defaultInstallOptions({
      devCluster: { apiServerPort: Number(new URL(info.server).port) },
      kubeletRootDir: join(info.stateDir, 'kubelet'),
    });
    // The component manifests, not the operator's: this test installs the components by
    // hand, without virt-api (the operator's install, with virt-api and its certificates,
    // is operator.serial.test.ts, on a cluster of its own).
    for (const [name, text] of manifestFiles(opts)) {
      if (name !== 'kubevirt-ts-operator.yaml') writeFileSync(join(dir, name), text);
    }
    kubectl('apply', '-f', dir);
    // TCG guests: KVM is unusable for a guest on these machines (see docs/cluster.md).
    writeFileSync(
      join(dir, 'kubevirt-cr.yaml'),
      stringify({
        apiVersion: 'kubevirt.io/v1',
        kind: 'KubeVirt',
        metadata: { name: 'kubevirt', namespace: 'kubevirt' },
        spec: { configuration: { developerConfiguration: { useEmulation: true } } },
      }),
    );
    kubectl('apply', '-f', join(dir, 'kubevirt-cr.yaml'));
    await core.createNamespace({ body: { metadata: { name: NS } } });
    await waitFor(
      'default service account',
      () => core.readNamespacedServiceAccount({ name: 'default', namespace: NS }),
      60_000,
      200,
    );
  }, 300_000);

  afterAll(async () => {
    if (!info) return;
    await core.deleteNamespace({ name: NS }).catch(() => undefined);
    try {
      kubectl('delete', '--ignore-not-found', '--wait=false', '-f', dir);
    } catch {
      // The run's cluster goes down next anyway.
    }
    rmSync(dir, { recursive: true, force: true });
  });

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

  it('boots the tiny guest from its containerDisk in a launcher pod the kubelet started', async () => {
    const vm = readFileSync(join(repoRoot, 'examples', 'vm-tiny-containerdisk.yaml'), 'utf8').replace(
      'namespace: default',
      `namespace: ${NS}`,
    );
    writeFileSync(join(dir, 'vm.yaml'), vm);
    kubectl('apply', '-f', join(dir, 'vm.yaml'));
    await waitFor(
      'VMI Running',
      async () => {
        const vmi = (await custom
          .getNamespacedCustomObject({
            group: 'kubevirt.io',
            version: 'v1',
            namespace: NS,
            plural: 'virtualmachineinstances',
            name: VM,
          })
          .catch(() => undefined)) as { status?: { phase?: string } } | undefined;
        return vmi?.status?.phase === 'Running';
      },
      240_000,
      1_000,
    );
    const pods = (await core.listNamespacedPod({ namespace: NS, labelSelector: 'kubevirt.io=virt-launcher' }))
      .items;
    expect(pods).toHaveLength(1);
    launcher = pods[0];
    const compute = launcher.spec?.containers.find((c) => c.name === 'compute');
    expect(compute?.securityContext?.privileged).toBe(false);
    expect(compute?.securityContext?.runAsUser).toBe(107);
    // TCG: no device requested, so the kubelet gives the pod no /dev/kvm.
    expect(compute?.resources?.requests?.['devices.kubevirt.io/kvm']).toBeUndefined();
    expect(launcher.spec?.initContainers?.map((c) => c.name)).toEqual([
      'container-disk-binary',
      'volumeboot',
    ]);
    const cid = launcher.status?.containerStatuses?.find((s) => s.name === 'compute')?.containerID ?? '';
    expect(cid).toMatch(/^containerd:\/\/[0-9a-f]{64}$/);

    const exec = (...cmd: string[]) =>
      kubectl('exec', '-n', NS, launcher.metadata?.name ?? '', '-c', 'compute', '--', ...cmd);
    expect(exec('busybox', 'sh', '-c', 'test -e /dev/kvm && echo present || echo absent').trim()).toBe(
      'absent',
    );
    const ps = exec('busybox', 'ps', '-o', 'user,comm');
    expect(ps).toMatch(/^qemu +libvirtd$/m);
    expect(ps).toMatch(/^qemu +virtlogd$/m);
    expect(ps).toMatch(/^qemu +qemu-system-x86$/m);

    // QEMU on the host: user 107, in the compute container's memory cgroup of this pod.
    const pids = execFileSync('pgrep', ['-f', `guest=${NS}_${VM},`], { encoding: 'utf8' })
      .trim()
      .split('\n');
    expect(pids).toHaveLength(1);
    qemuPid = Number(pids[0]);
    expect(readFileSync(`/proc/${qemuPid}/status`, 'utf8')).toMatch(/^Uid:\t107\t107\t107\t107$/m);
    const memLine = readFileSync(`/proc/${qemuPid}/cgroup`, 'utf8')
      .split('\n')
      .find((l) => /^\d+:memory:/.test(l));
    const memPath = memLine?.split(':')[2] ?? '';
    expect(memPath).toMatch(
      new RegExp(
        `^/kubepods(/(burstable|besteffort))?/pod${launcher.metadata?.uid}/${cid.slice('containerd://'.length)}$`,
      ),
    );
    expect(readFileSync(`/sys/fs/cgroup/memory${memPath}/cgroup.procs`, 'utf8').split('\n')).toContain(
      String(qemuPid),
    );

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
  }, 600_000);

  it('keeps the guest through a new virt-handler pod and a new leading virt-controller', async () => {
    expect(launcher, 'the boot test ran').toBeDefined();
    const lease = await kubeLease();
    const leader = lease.spec?.holderIdentity ?? '';
    expect(leader).toMatch(/^virt-controller-/);
    const handlers = (
      await core.listNamespacedPod({ namespace: 'kubevirt', labelSelector: 'kubevirt.io=virt-handler' })
    ).items;
    kubectl(
      'delete',
      'pod',
      '-n',
      'kubevirt',
      '--wait=true',
      handlers[0].metadata?.name ?? '',
      leader.split('_')[0],
    );
    await waitFor(
      'a new virt-handler Ready and a new leader',
      async () => {
        const pods = (await core.listNamespacedPod({ namespace: 'kubevirt' })).items;
        const fresh = pods.filter(
          (p) =>
            p.metadata?.labels?.['kubevirt.io'] === 'virt-handler' &&
            p.metadata?.uid !== handlers[0].metadata?.uid &&
            p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
        );
        const l = (await kubeLease()).spec?.holderIdentity;
        return fresh.length === 1 && l && l !== leader;
      },
      180_000,
      1_000,
    );
    // Same QEMU, booted once, the launcher pod untouched, the VMI still Running.
    expect(readFileSync(`/proc/${qemuPid}/cmdline`, 'utf8')).toContain(`guest=${NS}_${VM},`);
    const vmiUid = launcher.metadata?.labels?.['kubevirt.io/created-by'];
    const n = kubectl(
      'exec',
      '-n',
      NS,
      launcher.metadata?.name ?? '',
      '-c',
      'compute',
      '--',
      'busybox',
      'grep',
      '-c',
      MARKER,
      `/var/run/kubevirt-private/${vmiUid}/virt-serial0-log`,
    );
    expect(n.trim()).toBe('1');
    const pods = (await core.listNamespacedPod({ namespace: NS, labelSelector: 'kubevirt.io=virt-launcher' }))
      .items;
    expect(pods.map((p) => p.metadata?.uid)).toEqual([launcher.metadata?.uid]);
    const vmi = (await custom.getNamespacedCustomObject({
      group: 'kubevirt.io',
      version: 'v1',
      namespace: NS,
      plural: 'virtualmachineinstances',
      name: VM,
    })) as { status?: { phase?: string } };
    expect(vmi.status?.phase).toBe('Running');
  }, 400_000);

  it('keeps the guest through a kubelet restart and a containerd restart', async () => {
    expect(launcher, 'the boot test ran').toBeDefined();
    const paths = clusterPaths(info.stateDir);
    // Each daemon again with its own command line (config and kubeconfig files stay).
    const restart = async (name: string, binary: string) => {
      const pid = daemonPid(paths, name, binary);
      expect(pid, `${name} runs`).toBeDefined();
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      await stopDaemon(paths, name, binary);
      startDaemon(paths, name, binary, argv.slice(1));
    };
    for (const [name, binary] of [
      ['kubelet', kubeletBin()],
      ['containerd', CONTAINERD_BIN],
    ] as const) {
      await restart(name, binary);
      await waitFor(
        `Node Ready and the launcher's containers seen after the ${name} restart`,
        async () => {
          const n = await core.readNode({ name: info.nodeName });
          const ready = n.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
          const p = await core.readNamespacedPod({ name: launcher.metadata?.name ?? '', namespace: NS });
          const running = p.status?.containerStatuses?.find((c) => c.name === 'compute')?.state?.running;
          // The kubelet lists the pod's containers again through the restarted containerd.
          if (!ready || !running) return undefined;
          return (
            kubectl('exec', '-n', NS, p.metadata?.name ?? '', '-c', 'compute', '--', 'busybox', 'true') === ''
          );
        },
        180_000,
        1_000,
      );
      // The same QEMU, booted once.
      expect(readFileSync(`/proc/${qemuPid}/cmdline`, 'utf8')).toContain(`guest=${NS}_${VM},`);
      const vmiUid = launcher.metadata?.labels?.['kubevirt.io/created-by'];
      const n = kubectl(
        'exec',
        '-n',
        NS,
        launcher.metadata?.name ?? '',
        '-c',
        'compute',
        '--',
        'busybox',
        'grep',
        '-c',
        MARKER,
        `/var/run/kubevirt-private/${vmiUid}/virt-serial0-log`,
      );
      expect(n.trim(), `boot marker count after the ${name} restart`).toBe('1');
      const status = await core.readNamespacedPod({ name: launcher.metadata?.name ?? '', namespace: NS });
      expect(status.status?.containerStatuses?.find((c) => c.name === 'compute')?.restartCount).toBe(0);
    }
  }, 600_000);

  it('virtctl stop stops it: the launcher pod and QEMU are gone, the VM is Stopped', async () => {
    expect(launcher, 'the boot test ran').toBeDefined();
    const out = execFileSync(
      process.execPath,
      [
        join(repoRoot, 'dist', 'cli', 'virtctl.js'),
        'stop',
        VM,
        '-n',
        NS,
        '--kubeconfig',
        info.kubeconfigPath,
      ],
      { encoding: 'utf8' },
    );
    expect(out).toBe(`VM ${VM} was scheduled to stop\n`);
    await waitFor(
      'launcher pod gone',
      async () => {
        const pods = (
          await core.listNamespacedPod({ namespace: NS, labelSelector: 'kubevirt.io=virt-launcher' })
        ).items;
        return pods.length === 0;
      },
      180_000,
      1_000,
    );
    const vm = await waitFor(
      'VM Stopped',
      async () => {
        const v = (await custom.getNamespacedCustomObject({
          group: 'kubevirt.io',
          version: 'v1',
          namespace: NS,
          plural: 'virtualmachines',
          name: VM,
        })) as { status?: { printableStatus?: string; ready?: boolean } };
        return v.status?.printableStatus === 'Stopped' ? v : undefined;
      },
      120_000,
      1_000,
    );
    expect(vm.status?.ready).not.toBe(true);
    expect(() => readFileSync(`/proc/${qemuPid}/status`)).toThrow(/ENOENT/);
  }, 400_000);
});
