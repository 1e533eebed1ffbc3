/**
 * The guest through component and node-daemon restarts on the real one-node cluster, run
 * by vm-tiny.test.ts after its boot: a TCP connection from the peer pod to the guest's
 * echo held open while the virt-handler pod and the leading virt-controller are deleted
 * (new ones take over and the same connection carries more bytes), then the kubelet and
 * containerd restarted with their own command lines. After each: the same QEMU, booted
 * once, the launcher pod untouched and the VMI Running (the test file's check).
 */
import { readFileSync } from 'node:fs';
import type { CoreV1Api, V1Lease, V1Pod } from '@kubernetes/client-node';
import { expect, it } from 'vitest';
import { CONTAINERD_BIN } from '../../scripts/cluster/containerd';
import { kubeletBin } from '../../scripts/cluster/kubelet';
import {
  type ClusterInfo,
  clusterPaths,
  daemonPid,
  startDaemon,
  stopDaemon,
} from '../../scripts/cluster/state';
import { kubectlExecAsync } from '../support/cluster-pods';
import { HOLD_CLIENT } from '../support/netns-process';
import { waitFor } from '../support/wait';

/** What the restart cases read from vm-tiny.test.ts once its boot case ran. */
export interface RestartContext {
  info: ClusterInfo;
  core: CoreV1Api;
  kubectl: (...args: string[]) => string;
  namespace: string;
  guestPort: number;
  launcher: V1Pod;
  podIP: string;
  /** A command in the launcher's compute container; its output. */
  exec: (...cmd: string[]) => string;
  kubeLease: () => Promise<V1Lease>;
  /** The same QEMU, booted once, the launcher pod untouched, the VMI Running. */
  expectGuestUnchanged: (after: string) => Promise<void>;
}

/** Registers the restart cases; `ctx` is read when they run. */
export function registerRestartCases(ctx: () => RestartContext): void {
  it('keeps the guest and an open TCP connection to it through a new virt-handler pod and a new leading virt-controller', async () => {
    const { info, core, kubectl, namespace, guestPort, launcher, podIP, kubeLease, expectGuestUnchanged } =
      ctx();
    expect(launcher, 'the boot test ran').toBeDefined();
    // A connection from the peer to the guest's echo, held open across the restarts.
    const hold = kubectlExecAsync(info.kubeconfigPath, namespace, 'peer', [
      'node',
      '-e',
      HOLD_CLIENT,
      podIP,
      String(guestPort),
      '4096',
      '/tmp/go',
    ]);
    await waitFor(
      'the held connection echoed its first bytes',
      () => hold.out().includes('first 4096'),
      120_000,
      200,
    );
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
    await expectGuestUnchanged('a new virt-handler and virt-controller leader');
    // The same connection carries more bytes after the restart.
    kubectl('exec', '-n', namespace, 'peer', '--', 'touch', '/tmp/go');
    const code = await hold.exited;
    expect(hold.out()).toContain('second 8192');
    expect(hold.out()).not.toContain('error');
    expect(code).toBe(0);
    process.stdout.write(`held connection ${podIP}:${guestPort}: ${hold.out().replace(/\n/g, '; ')}\n`);
  }, 400_000);

  it('keeps the guest through a kubelet restart and a containerd restart', async () => {
    const { info, core, namespace, launcher, exec, expectGuestUnchanged } = ctx();
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
          const p = await core.readNamespacedPod({ name: launcher.metadata?.name ?? '', namespace });
          const running = p.status?.containerStatuses?.find((c) => c.name === 'compute')?.state?.running;
          // The kubelet lists the pod's containers again through the restarted containerd.
          if (!ready || !running) return undefined;
          return exec('busybox', 'true') === '';
        },
        180_000,
        1_000,
      );
      await expectGuestUnchanged(`the ${name} restart`);
    }
  }, 600_000);
}
