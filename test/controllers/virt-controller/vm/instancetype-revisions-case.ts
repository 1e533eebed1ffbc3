/**
 * Issue 28's instance type revision scenario, run against any API (the embedded store,
 * a real kube-apiserver) with a virt-controller (instancetypes on) and a node simulator:
 * a VM's first sync stores its VirtualMachineInstancetype and VirtualMachinePreference as
 * ControllerRevisions owned by the VM and referenced from its status; the VMI gets the
 * stored vCPU count; editing the instance type leaves the next start unchanged; clearing
 * `status.instancetypeRef.controllerRevisionRef` stores the edited object and the next
 * start has the new vCPU count.
 */
import { expect } from 'vitest';
import type { VirtualMachine, VirtualMachineInstance } from '../../../../src/api/generated/types';
import { type ControllerRevision, RevisionLabels } from '../../../../src/api/instancetype/revision';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import { ConflictError } from '../../../../src/controllers/runtime/errors';
import {
  ControllerRevisionType,
  VirtualMachineInstancetypeType,
  VirtualMachinePreferenceType,
  VirtualMachineType,
} from '../../../../src/controllers/runtime/resources';
import type { KubeObject, ObjectClient } from '../../../../src/controllers/runtime/types';
import { waitFor } from '../../../support/wait';

type Vm = VirtualMachine & KubeObject;
type Vmi = VirtualMachineInstance & KubeObject;

const vcpus = (vmi: VirtualMachineInstance) => {
  const c = vmi.spec.domain.cpu ?? {};
  return (c.sockets ?? 1) * (c.cores ?? 1) * (c.threads ?? 1);
};

/** Runs the scenario in `ns` with names prefixed `prefix`; `timeoutMs` bounds each wait. */
export async function instancetypeRevisionScenario(
  client: ObjectClient,
  ns: string,
  prefix: string,
  timeoutMs = 20_000,
): Promise<void> {
  const itName = `${prefix}-it`;
  const vmName = `${prefix}-vm`;
  const it = await client.create<
    KubeObject & { spec: { cpu: { guest: number }; memory: { guest: string } } }
  >(VirtualMachineInstancetypeType, {
    apiVersion: 'instancetype.kubevirt.io/v1beta1',
    kind: 'VirtualMachineInstancetype',
    metadata: { name: itName, namespace: ns },
    spec: { cpu: { guest: 1 }, memory: { guest: '128Mi' } },
  } as KubeObject & { spec: { cpu: { guest: number }; memory: { guest: string } } });
  await client.create(VirtualMachinePreferenceType, {
    apiVersion: 'instancetype.kubevirt.io/v1beta1',
    kind: 'VirtualMachinePreference',
    metadata: { name: `${prefix}-pref`, namespace: ns },
    spec: { cpu: { preferredCPUTopology: 'sockets' } },
  } as KubeObject);
  const vm: VirtualMachine = {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name: vmName, namespace: ns },
    spec: {
      runStrategy: 'Always',
      instancetype: { name: itName, kind: 'VirtualMachineInstancetype' },
      preference: { name: `${prefix}-pref`, kind: 'VirtualMachinePreference' },
      template: { metadata: { labels: { 'kubevirt.io/vm': vmName } }, spec: { domain: { devices: {} } } },
    },
  };
  const created = await client.create<Vm>(VirtualMachineType, vm as Vm);
  const getVm = () => client.get<Vm>(VirtualMachineType, vmName, ns);
  const revisionOf = (v: Vm) => v.status?.instancetypeRef?.controllerRevisionRef?.name;
  // The controller writes the VM's status meanwhile: read, change and write until no conflict.
  const changeVm = (change: (v: Vm) => Vm, status = false) =>
    waitFor(
      'VM written',
      async () => {
        const next = change(await getVm());
        try {
          return await (status
            ? client.updateStatus(VirtualMachineType, next)
            : client.update(VirtualMachineType, next));
        } catch (err) {
          if (err instanceof ConflictError) return undefined;
          throw err;
        }
      },
      timeoutMs,
    );

  // First sync: both objects stored, owned by the VM, referenced from its status.
  const first = await waitFor(
    'status refs',
    async () => {
      const v = await getVm();
      return revisionOf(v) && v.status?.preferenceRef?.controllerRevisionRef?.name ? v : undefined;
    },
    timeoutMs,
  );
  expect(first.status?.instancetypeRef).toMatchObject({ name: itName, kind: 'VirtualMachineInstancetype' });
  const rev1Name = revisionOf(first) ?? '';
  expect(rev1Name).toBe(`${vmName}-${itName}-v1beta1-${it.metadata?.uid}-1`);
  const rev1 = await client.get<ControllerRevision & KubeObject>(ControllerRevisionType, rev1Name, ns);
  expect(rev1.metadata?.ownerReferences?.[0]).toMatchObject({
    kind: 'VirtualMachine',
    name: vmName,
    uid: created.metadata?.uid,
    controller: true,
  });
  expect(rev1.metadata?.labels?.[RevisionLabels.objectName]).toBe(itName);
  expect(rev1.data).toMatchObject({
    apiVersion: 'instancetype.kubevirt.io/v1beta1',
    kind: 'VirtualMachineInstancetype',
    metadata: { name: itName, uid: it.metadata?.uid, generation: 1 },
    spec: { cpu: { guest: 1 }, memory: { guest: '128Mi' } },
  });

  let lastVmiUid = '';
  const runningVmi = (what: string) =>
    waitFor(
      what,
      async () => {
        const x = await client.get<Vmi>(VmiResource, vmName, ns);
        return x.status?.phase === 'Running' && x.metadata?.uid !== lastVmiUid ? x : undefined;
      },
      timeoutMs,
    );
  const restart = async (what: string): Promise<Vmi> => {
    for (const runStrategy of ['Halted', 'Always']) {
      await changeVm((v) => ({ ...v, spec: { ...v.spec, runStrategy } }));
      if (runStrategy === 'Halted') {
        await waitFor(
          'VMI gone',
          async () => !(await client.get<Vmi>(VmiResource, vmName, ns).catch(() => undefined)),
          timeoutMs,
        );
      }
    }
    return runningVmi(what);
  };

  let vmi = await runningVmi('first VMI Running');
  expect(vcpus(vmi)).toBe(1);
  expect(vmi.spec.domain.memory?.guest).toBe('128Mi');
  lastVmiUid = vmi.metadata?.uid ?? '';

  // Editing the instance type leaves the next start unchanged.
  const live = await client.get<typeof it>(VirtualMachineInstancetypeType, itName, ns);
  await client.update(VirtualMachineInstancetypeType, { ...live, spec: { ...live.spec, cpu: { guest: 2 } } });
  vmi = await restart('VMI Running after the instance type edit');
  expect(vcpus(vmi)).toBe(1);
  lastVmiUid = vmi.metadata?.uid ?? '';
  expect(revisionOf(await getVm())).toBe(rev1Name);

  // Clearing the revision reference stores the edited instance type; the next start has it.
  await changeVm((v) => {
    const { controllerRevisionRef: _, ...refWithout } = v.status?.instancetypeRef ?? {};
    return { ...v, status: { ...v.status, instancetypeRef: refWithout } };
  }, true);
  const second = await waitFor(
    'a new revision referenced',
    async () => {
      const x = await getVm();
      return revisionOf(x) && revisionOf(x) !== rev1Name ? x : undefined;
    },
    timeoutMs,
  );
  expect(revisionOf(second)).toBe(`${vmName}-${itName}-v1beta1-${it.metadata?.uid}-2`);
  vmi = await restart('VMI Running after clearing the reference');
  expect(vcpus(vmi)).toBe(2);
  // The preference's revision was kept: its sockets topology still applies.
  expect(vmi.spec.domain.cpu?.sockets).toBe(2);
}
