/**
 * virt-api's view of a VM's instance type (admission and expand-spec): the stored
 * revision the VM references, as upstream's SpecFinder, else the live object.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type { VirtualMachine } from '../../../src/api/generated/types';
import { buildRevision } from '../../../src/api/instancetype/revision';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import {
  ControllerRevisionType,
  VirtualMachineClusterInstancetypeType,
} from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { catalogForVm } from '../../../src/controllers/virt-api/instancetype-lookup';
import { expandVm } from '../../../src/controllers/virt-api/vm-lifecycle';

type It = KubeObject & { spec: { cpu: { guest: number }; memory: { guest: string } } };

describe('virt-api instance type lookup with revisions', () => {
  let store: EmbeddedStore;
  let it1: It;
  let revName: string;
  beforeEach(async () => {
    store = await EmbeddedStore.open({});
    it1 = await store.create<It>(VirtualMachineClusterInstancetypeType, {
      apiVersion: 'instancetype.kubevirt.io/v1beta1',
      kind: 'VirtualMachineClusterInstancetype',
      metadata: { name: 'small' },
      spec: { cpu: { guest: 1 }, memory: { guest: '128Mi' } },
    } as It);
    const rev = buildRevision('vm1', 'default', { ...it1, kind: 'VirtualMachineClusterInstancetype' });
    revName = rev.metadata?.name ?? '';
    await store.create(ControllerRevisionType, rev as KubeObject);
    // The live object is edited after the revision was stored.
    await store.update(VirtualMachineClusterInstancetypeType, {
      ...it1,
      spec: { ...it1.spec, cpu: { guest: 4 } },
    });
  });
  afterEach(async () => {
    await store.close();
  });

  const vm = (ref?: string): VirtualMachine => ({
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name: 'vm1', namespace: 'default' },
    spec: { instancetype: { name: 'small' }, template: { spec: { domain: { devices: {} } } } },
    ...(ref ? { status: { instancetypeRef: { name: 'small', controllerRevisionRef: { name: ref } } } } : {}),
  });

  it('reads the referenced revision, else the live object; a missing revision leaves the live one', async () => {
    expect(
      (await catalogForVm(store, vm(revName)))?.findInstancetype({ name: 'small' }, 'default')?.cpu?.guest,
    ).toBe(1);
    expect(
      (await catalogForVm(store, vm()))?.findInstancetype({ name: 'small' }, 'default')?.cpu?.guest,
    ).toBe(4);
    expect(
      (await catalogForVm(store, vm('gone')))?.findInstancetype({ name: 'small' }, 'default')?.cpu?.guest,
    ).toBe(4);
  });

  it('expand-spec expands from the stored revision', async () => {
    const config = createClusterConfig({}, { hostArchitecture: 'amd64' });
    const expanded = await expandVm(store, vm(revName) as never, config);
    expect(expanded.spec.template.spec?.domain.cpu?.sockets).toBe(1);
    expect((await expandVm(store, vm() as never, config)).spec.template.spec?.domain.cpu?.sockets).toBe(4);
  });
});
