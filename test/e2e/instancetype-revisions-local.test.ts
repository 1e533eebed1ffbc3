/**
 * Instance type revisions in local mode with the real driver (issue 28's "done when"):
 * on the embedded store, virt-controller (instance types on), the local pod runtime,
 * virt-handler and the emulation driver on qemu:///system. A VM names a
 * VirtualMachineInstancetype of 1 vCPU and starts (its QEMU has 1 vCPU thread); the
 * instance type is edited to 2 vCPUs; the VM's next start still has 1 (VMI spec, QEMU,
 * and the guest's /proc/cpuinfo); clearing `status.instancetypeRef.controllerRevisionRef`
 * stores the edited instance type and the next start has 2 everywhere. The first start
 * is stopped as soon as it runs (no boot needed to prove it), the other two boot.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachineInstance } from '../../src/api/generated/types';
import type { EmbeddedStore } from '../../src/controllers/runtime/embedded/store';
import { VirtualMachineInstancetypeType, VirtualMachineType } from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { BOOT_MARKER } from '../support/guest';
import {
  type EmbeddedNode,
  e2eRun,
  type NodeHarness,
  startEmbeddedNode,
  tinyGuestVm,
  waitFor,
} from './node-harness';
import { qemuVcpus } from './qemu-size';

const run = e2eRun('instance type revisions (local mode, real driver)');

type Vm = VirtualMachine & KubeObject;
type It = KubeObject & { spec: { cpu: { guest: number }; memory: { guest: string } } };

describe.runIf(run)('instance type revisions in local mode with a real guest', () => {
  const ns = 'default';
  const name = `e2e-rev-${process.pid}`;
  const domain = `${ns}_${name}`;
  let store: EmbeddedStore;
  let node: NodeHarness;
  let embedded: EmbeddedNode | undefined;

  beforeAll(async () => {
    embedded = await startEmbeddedNode(`node-rev-${process.pid}`, { instancetypes: true });
    ({ store, node } = embedded);
  }, 60_000);

  afterAll(async () => {
    await embedded?.close(domain);
  }, 60_000);

  /** Sets the VM's runStrategy, retrying over the controller's own status writes. */
  const setRunStrategy = (runStrategy: string) =>
    waitFor(`runStrategy ${runStrategy}`, async () => {
      const v = await node.getVm(ns, name);
      return store
        .update(VirtualMachineType, { ...v, spec: { ...v.spec, runStrategy } })
        .catch(() => undefined);
    });

  /** Starts the VM and waits for a new VMI Running; with `boot`, for the guest's boot and its CPU count too. */
  async function start(
    previousUid: string,
    boot: boolean,
  ): Promise<{ vmi: VirtualMachineInstance; guestCpus?: number }> {
    await setRunStrategy('Always');
    const vmi = await waitFor('a new VMI Running', async () => {
      const v = await node.getVmi(ns, name).catch(() => undefined);
      return v?.status?.phase === 'Running' && v.metadata?.uid !== previousUid ? v : undefined;
    });
    if (!boot) return { vmi };
    const pod = await waitFor('the launcher pod', () => node.podOf(vmi));
    const serial = await node.console(pod);
    try {
      await serial.waitFor(BOOT_MARKER, 180_000);
      const out = await serial.run('grep -c ^processor /proc/cpuinfo', 10_000);
      return { vmi, guestCpus: Number(/^(\d+)\s*$/m.exec(out)?.[1]) };
    } finally {
      serial.close();
    }
  }

  async function stop(): Promise<void> {
    await setRunStrategy('Halted');
    await waitFor('VMI gone', async () => !(await node.getVmi(ns, name).catch(() => undefined)));
  }

  const vcpus = (vmi: VirtualMachineInstance) => {
    const c = vmi.spec.domain.cpu ?? {};
    return (c.sockets ?? 1) * (c.cores ?? 1) * (c.threads ?? 1);
  };

  it('an instance type edited after the VM started leaves its next start unchanged; clearing the reference picks it up', async () => {
    const it = await store.create<It>(VirtualMachineInstancetypeType, {
      apiVersion: 'instancetype.kubevirt.io/v1beta1',
      kind: 'VirtualMachineInstancetype',
      metadata: { name: `${name}-it`, namespace: ns },
      spec: { cpu: { guest: 1 }, memory: { guest: '128Mi' } },
    } as It);
    const vm = tinyGuestVm(name, ns, 'Halted');
    // The instance type gives the memory (a request too would conflict with it); stop at once.
    delete vm.spec.template.spec?.domain.resources;
    vm.spec.template.spec!.terminationGracePeriodSeconds = 0;
    vm.spec.instancetype = { name: `${name}-it`, kind: 'VirtualMachineInstancetype' };
    await store.create(VirtualMachineType, vm as Vm);

    // First start: 1 vCPU from the stored revision.
    let { vmi } = await start('', false);
    expect(vcpus(vmi)).toBe(1);
    await waitFor('QEMU with 1 vCPU thread', () => qemuVcpus(domain) === 1);
    const rev1 = (await node.getVm(ns, name)).status?.instancetypeRef?.controllerRevisionRef?.name;
    expect(rev1).toBe(`${name}-${name}-it-v1beta1-${it.metadata?.uid}-1`);
    await stop();

    // Edited to 2 vCPUs: the next start keeps 1, in the VMI, in QEMU and in the guest.
    await store.update(VirtualMachineInstancetypeType, { ...it, spec: { ...it.spec, cpu: { guest: 2 } } });
    let guestCpus: number | undefined;
    ({ vmi, guestCpus } = await start(vmi.metadata?.uid ?? '', true));
    expect(vcpus(vmi)).toBe(1);
    expect(qemuVcpus(domain)).toBe(1);
    expect(guestCpus).toBe(1);
    await stop();

    // Reference cleared: the edited instance type is stored and the next start has 2 vCPUs.
    await waitFor('reference cleared', async () => {
      const v = await node.getVm(ns, name);
      const { controllerRevisionRef: _, ...ref } = v.status?.instancetypeRef ?? {};
      return store
        .updateStatus(VirtualMachineType, { ...v, status: { ...v.status, instancetypeRef: ref } })
        .catch(() => undefined);
    });
    await waitFor('the edited instance type stored', async () => {
      const r = (await node.getVm(ns, name)).status?.instancetypeRef?.controllerRevisionRef?.name;
      return r === `${name}-${name}-it-v1beta1-${it.metadata?.uid}-2`;
    });
    ({ vmi, guestCpus } = await start(vmi.metadata?.uid ?? '', true));
    expect(vcpus(vmi)).toBe(2);
    expect(qemuVcpus(domain)).toBe(2);
    expect(guestCpus).toBe(2);
  }, 480_000);
});
