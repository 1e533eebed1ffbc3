/**
 * Readiness and liveness probes on the real one-node cluster, run by vm-tiny.test.ts: the
 * VMI's probes become the launcher pod's (a tcpSocket probe the kubelet makes to the pod
 * IP, which masquerade forwards to the guest; an exec probe the kubelet runs as
 * `kubevirt-ts virt-probe` in the compute container, which asks the launcher to run the
 * command through the guest's qemu-ga). The VMI's Ready condition stays False until the
 * guest opens the probed port from its console; when the liveness command starts failing
 * the kubelet kills the compute container and runStrategy Always starts a new VMI.
 */
import { expect, it } from 'vitest';
import type { VirtualMachine } from '../../src/api/generated/types';
import { waitFor } from '../support/wait';
import { type ClusterVmContext, deleteVm, startVm, vmManifest } from './vm-network-cases';

/** Registers the probes case; `ctx` is read when it runs. */
export function registerProbesCase(ctx: () => ClusterVmContext): void {
  it('probes: Ready follows a tcpSocket readiness probe; a failing exec liveness probe (qemu-ga) restarts the VMI', {
    timeout: 600_000,
  }, async () => {
    const c = ctx();
    const name = 'vm-tiny-probes';
    const vm = JSON.parse(
      vmManifest(name, c.namespace, [{ name: 'default', masquerade: {} }], [{ name: 'default', pod: {} }]),
    );
    const spec = vm.spec.template.spec;
    spec.readinessProbe = { tcpSocket: { port: 9000 }, periodSeconds: 1, failureThreshold: 1 };
    spec.livenessProbe = {
      exec: { command: ['/bin/sh', '-c', '! test -f /tmp/dead'] },
      initialDelaySeconds: 30,
      periodSeconds: 2,
      failureThreshold: 10,
    };
    const started = await startVm(c, name, JSON.stringify(vm));
    try {
      const first = await started.readVmi();
      const compute = started.launcher.spec?.containers.find((x) => x.name === 'compute');
      expect(compute?.readinessProbe?.tcpSocket?.port).toBe(9000);
      expect(compute?.livenessProbe?.exec?.command?.slice(0, 4)).toEqual([
        'kubevirt-ts',
        'virt-probe',
        '--domainName',
        `${c.namespace}_${name}`,
      ]);
      await started.con.waitFor('KUBEVIRT-TS-GUEST-LISTENING', 240_000);
      const podStart = new Date(started.launcher.status?.startTime ?? Date.now()).getTime();
      await waitFor(
        'the readiness probe to have run',
        () => Date.now() > podStart + 14_000 || undefined,
        60_000,
        500,
      );
      const ready = async () =>
        (await started.readVmi()).status?.conditions?.find((x) => x.type === 'Ready')?.status;
      expect(await ready()).toBe('False');
      await started.con.run('(nc -ll -p 9000 -e /bin/cat </dev/null >/dev/null 2>&1 &)');
      const opened = Date.now();
      await waitFor('VMI Ready', async () => ((await ready()) === 'True' ? true : undefined), 60_000, 250);
      process.stdout.write(
        `cluster: VMI ${name} Ready ${Date.now() - opened} ms after the guest opened port 9000\n`,
      );
      // The liveness probe (virt-probe -> launcher Exec -> qemu-ga) passes while /tmp/dead is absent.
      await waitFor('liveness probing', () => Date.now() > podStart + 45_000 || undefined, 120_000, 500);
      expect((await started.readVmi()).metadata?.uid).toBe(first.metadata?.uid);
      await started.con.run('touch /tmp/dead');
      const killedAt = Date.now();
      const second = await waitFor(
        'a new VMI (runStrategy Always)',
        async () => {
          const v = await started.readVmi().catch(() => undefined);
          return v && v.metadata?.uid !== first.metadata?.uid ? v : undefined;
        },
        240_000,
        1_000,
      );
      process.stdout.write(`cluster: liveness failure -> new VMI after ${Date.now() - killedAt} ms\n`);
      const events = c.kubectl('get', 'events', '-n', c.namespace, '-o', 'json');
      expect(events).toMatch(/Container compute failed liveness probe/);
      const vmObj = await waitFor(
        'the VM Running on the new VMI',
        async () => {
          const v = (await c.custom.getNamespacedCustomObject({
            group: 'kubevirt.io',
            version: 'v1',
            namespace: c.namespace,
            plural: 'virtualmachines',
            name,
          })) as VirtualMachine;
          const now = await started.readVmi().catch(() => undefined);
          return v.status?.printableStatus === 'Running' && now?.metadata?.uid === second.metadata?.uid
            ? v
            : undefined;
        },
        240_000,
        1_000,
      );
      expect(vmObj.status?.printableStatus).toBe('Running');
    } finally {
      started.con.close();
      await deleteVm(c, name);
    }
  });
}
