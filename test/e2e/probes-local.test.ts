/**
 * Readiness and liveness probes in local mode with the real tiny guest, as upstream runs
 * them: the VMI's probes become the launcher pod's (pod-renderer), and the local pod
 * runtime runs them as the kubelet would. A tcpSocket readiness probe on a port the guest
 * opens only when told (from its serial console) keeps the VMI's Ready condition False
 * until then; an exec liveness probe runs through virt-probe, the launcher's Exec and the
 * guest's qemu-ga; when it starts failing the launcher is killed and runStrategy Always
 * starts a new VMI, which the VM's status follows.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachineInstance } from '../../src/api/generated/types';
import { CONSOLE_SOCKET } from '../../src/controllers/launcher-protocol/paths';
import { shortDir } from '../../src/controllers/launcher-protocol/short-dir';
import {
  EventType,
  VirtualMachineInstanceType,
  VirtualMachineType,
} from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { SerialConsole } from '../support/guest';
import { LocalNetworkRun } from '../support/local-network-e2e';
import { canTestNetworking, networkGuestDir } from '../support/net-snapshot';
import { cliBuilt, e2eRun, waitFor } from './node-harness';

const guest = networkGuestDir();
const run = e2eRun('VMI probes in local mode', () =>
  !canTestNetworking()
    ? 'needs root and /usr/lib/cni (containernetworking-plugins)'
    : !cliBuilt()
      ? 'npm run build first'
      : !guest
        ? 'no tiny guest of recipe 7 or later (networking): run scripts/guest/build.sh'
        : undefined,
);

describe.runIf(run)('VMI probes in local mode (real guest)', () => {
  const t = new LocalNetworkRun('kvtsp', '10.244.86.0/24', `probes-${process.pid}`);
  const name = t.name;
  const vmi = () =>
    t.node.store.get<VirtualMachineInstance & KubeObject>(VirtualMachineInstanceType, name, 'default');
  const ready = (v: VirtualMachineInstance) => v.status?.conditions?.find((c) => c.type === 'Ready');

  beforeAll(() => t.start(guest ?? ''), 60_000);
  afterAll(() => t.tearDown(), 120_000);

  it('Ready follows a tcpSocket readiness probe; a failing exec liveness probe restarts the VMI', {
    timeout: 500_000,
  }, async () => {
    const peerIP = await t.startPeer(7070);
    await t.applyTinyNetVm(`${peerIP}:7070`, (spec) => {
      spec.readinessProbe = { tcpSocket: { port: 9000 }, periodSeconds: 1, failureThreshold: 1 };
      // Long enough for the guest to boot and its agent to connect under emulation.
      spec.livenessProbe = {
        exec: { command: ['/bin/sh', '-c', '! test -f /tmp/dead'] },
        initialDelaySeconds: 30,
        periodSeconds: 2,
        failureThreshold: 10,
      };
    });
    const pod = await t.launcherPod();
    const first = await waitFor(
      'VMI Running',
      async () => {
        const v = await vmi();
        return v.status?.phase === 'Running' && v;
      },
      240_000,
    );
    const firstUid = first.metadata?.uid;
    const console_ = await SerialConsole.connect(join(shortDir(t.socketsOf(pod)), CONSOLE_SOCKET), 60_000);
    try {
      await console_.waitFor(/KUBEVIRT-TS-GUEST-SENT [^\n]*reply_bytes=\d+\r?\n/, 240_000);
      // The probe has run for a while (10 s startup delay passed): the port is closed, not Ready.
      await waitFor(
        'the pod to be probed',
        async () => {
          const s = Date.parse(pod.status?.startTime ?? '');
          return Date.now() > s + 13_000;
        },
        60_000,
      );
      const before = await vmi();
      expect(ready(before)?.status).toBe('False');
      expect(ready(before)?.reason).toBe('ContainersNotReady');
      // The guest opens the port: Ready follows.
      await console_.run('(nc -ll -p 9000 -e /bin/cat </dev/null >/dev/null 2>&1 &)');
      const opened = Date.now();
      await waitFor('VMI Ready', async () => ready(await vmi())?.status === 'True', 60_000);
      process.stdout.write(`VMI ${name} Ready ${Date.now() - opened} ms after the guest opened port 9000\n`);

      // The liveness probe (through qemu-ga) passes until the guest says otherwise.
      await new Promise((r) => setTimeout(r, 6_000));
      expect((await vmi()).metadata?.uid).toBe(firstUid);
      await console_.run('touch /tmp/dead');
    } finally {
      console_.close();
    }
    const killedAt = Date.now();
    const second = await waitFor(
      'a new VMI (runStrategy Always)',
      async () => {
        const v = await vmi().catch(() => undefined);
        return v && v.metadata?.uid !== firstUid && v;
      },
      180_000,
    );
    process.stdout.write(
      `liveness failure -> new VMI ${second.metadata?.uid} after ${Date.now() - killedAt} ms\n`,
    );
    const events = await t.node.store.list<KubeObject & { reason?: string; message?: string }>(EventType, {
      namespace: 'default',
    });
    const killing = events.items.find((e) => e.reason === 'Killing');
    expect(killing?.message).toBe('Container compute failed liveness probe, will be restarted');
    expect(
      events.items.some(
        (e) => e.reason === 'Unhealthy' && /^Liveness probe failed: command exited 1/.test(e.message ?? ''),
      ),
    ).toBe(true);
    // The VM follows its new VMI back to Running.
    const vm = await waitFor(
      'the VM Running again on the new VMI',
      async () => {
        const v = await t.node.store.get<VirtualMachine & KubeObject>(VirtualMachineType, name, 'default');
        const now = await vmi().catch(() => undefined);
        return v.status?.printableStatus === 'Running' && now?.metadata?.uid === second.metadata?.uid && v;
      },
      240_000,
    );
    expect(vm.status?.printableStatus).toBe('Running');
    // The killed launcher stopped its guest before it exited: one QEMU runs for this VM, the
    // new VMI's (the liveness kill signals the launcher alone, not its libvirt daemon).
    const qemus = () =>
      spawnSync('pgrep', ['-f', `guest=default_${name},`], { encoding: 'utf8' })
        .stdout.split('\n')
        .filter(Boolean);
    await waitFor('one QEMU for the VM', async () => (qemus().length === 1 ? true : undefined), 60_000).catch(
      () => {
        throw new Error(
          `QEMU processes of ${name}: ${qemus().join(', ')} (the killed launcher's guest left behind)`,
        );
      },
    );
  });
});
