/**
 * The VM controller's revision store (InstancetypeRevisions) on an in-memory embedded
 * store: create-if-absent, reuse of an equal revision, the revision-first catalog, a
 * stale reference, a matcher's revisionName, and the errors that stop a VM's sync.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { VirtualMachine } from '../../../../src/api/generated/types';
import { createInstancetypeCatalog } from '../../../../src/api/instancetype/catalog';
import { buildRevision, type ControllerRevision } from '../../../../src/api/instancetype/revision';
import { EmbeddedStore } from '../../../../src/controllers/runtime/embedded/store';
import { ControllerRevisionType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { InstancetypeRevisions } from '../../../../src/controllers/virt-controller/vm/instancetype-revisions';

const small = (guest: number, generation = 1) => ({
  kind: 'VirtualMachineClusterInstancetype',
  metadata: { name: 'small', uid: 'it-uid', generation },
  spec: { cpu: { guest }, memory: { guest: '128Mi' } },
});
const pref = {
  kind: 'VirtualMachinePreference',
  metadata: { name: 'p', namespace: 'default', uid: 'p-uid', generation: 1 },
  spec: { cpu: { preferredCPUTopology: 'cores' } },
};

const vm = (
  status?: VirtualMachine['status'],
  it: VirtualMachine['spec']['instancetype'] = { name: 'small' },
): VirtualMachine => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachine',
  metadata: { name: 'vm1', namespace: 'default', uid: 'vm-uid' },
  spec: {
    instancetype: it,
    preference: { name: 'p', kind: 'VirtualMachinePreference' },
    template: { spec: { domain: { devices: {} } } },
  },
  status,
});

describe('InstancetypeRevisions', () => {
  let store: EmbeddedStore;
  let objects: unknown[];
  let revs: InstancetypeRevisions;
  beforeEach(async () => {
    store = await EmbeddedStore.open({});
    objects = [small(1), pref];
    revs = new InstancetypeRevisions({ client: store, catalog: () => createInstancetypeCatalog(objects) });
  });
  afterEach(async () => {
    await store.close();
  });

  it('stores both objects owned by the VM and returns the status references', async () => {
    const refs = await revs.store(vm());
    expect(refs).toEqual({
      instancetypeRef: { name: 'small', controllerRevisionRef: { name: 'vm1-small-v1beta1-it-uid-1' } },
      preferenceRef: {
        name: 'p',
        kind: 'VirtualMachinePreference',
        controllerRevisionRef: { name: 'vm1-p-v1beta1-p-uid-1' },
      },
    });
    const rev = await store.get<ControllerRevision & KubeObject>(
      ControllerRevisionType,
      'vm1-small-v1beta1-it-uid-1',
      'default',
    );
    expect(rev.metadata?.ownerReferences).toEqual([
      {
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachine',
        name: 'vm1',
        uid: 'vm-uid',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    // With the references in status there is nothing more to store.
    expect(await revs.store(vm(refs))).toBeUndefined();
    // Stored again (the status write was lost): the existing equal revision is reused.
    expect(await revs.store(vm())).toEqual(refs);
  });

  it('expands from the revision, not the live object, until the reference is cleared', async () => {
    const refs = await revs.store(vm());
    objects = [small(4, 2), pref];
    const catalog = await revs.catalogFor(vm(refs));
    expect(catalog.findInstancetype({ name: 'small' }, 'default')?.cpu?.guest).toBe(1);
    expect(catalog.findPreference({ name: 'p' }, 'default')).toEqual(pref.spec);
    // Cleared: a new revision of the edited object (generation 2).
    const cleared = { ...refs, instancetypeRef: { name: 'small' } };
    const next = await revs.store(vm(cleared));
    expect(next?.instancetypeRef?.controllerRevisionRef?.name).toBe('vm1-small-v1beta1-it-uid-2');
    const after = await revs.catalogFor(vm({ ...cleared, ...next }));
    expect(after.findInstancetype({ name: 'small' }, 'default')?.cpu?.guest).toBe(4);
  });

  it("honours a matcher's revisionName, and ignores a status reference to another object's revision", async () => {
    const other = buildRevision('x', 'default', small(8));
    await store.create(ControllerRevisionType, other as KubeObject);
    const byName = await revs.catalogFor(
      vm(undefined, { name: 'small', revisionName: other.metadata?.name }),
    );
    expect(byName.findInstancetype({ name: 'small' }, 'default')?.cpu?.guest).toBe(8);
    // The status still points at a revision of "small" while the matcher names "large": live "large".
    objects = [...objects, { ...small(3), metadata: { name: 'large', uid: 'l', generation: 1 } }];
    const stale = await revs.catalogFor(
      vm(
        { instancetypeRef: { name: 'small', controllerRevisionRef: { name: other.metadata?.name } } },
        { name: 'large' },
      ),
    );
    expect(stale.findInstancetype({ name: 'large' }, 'default')?.cpu?.guest).toBe(3);
  });

  it('reports what stops the sync: a missing object, a missing revision, a conflicting template', async () => {
    objects = [pref];
    expect((await revs.sync(vm())).error).toBe(
      'error encountered while storing instancetype.kubevirt.io controllerRevisions: spec.instancetype: Failure to find instancetype: virtualmachineclusterinstancetypes.instancetype.kubevirt.io "small" not found',
    );
    objects = [small(1), pref];
    const missing = vm({
      instancetypeRef: { name: 'small', controllerRevisionRef: { name: 'gone' } },
      preferenceRef: {
        name: 'p',
        kind: 'VirtualMachinePreference',
        controllerRevisionRef: { name: 'gone-too' },
      },
    });
    expect((await revs.sync(missing)).error).toContain('ControllerRevision default/gone not found');
    const conflicting = vm();
    conflicting.spec.template.spec!.domain.cpu = { sockets: 2 };
    expect((await revs.sync(conflicting)).error).toContain('spec.template.spec.domain.cpu.sockets');
    expect(await revs.sync({ ...vm(), spec: { template: {} } })).toEqual({});
  });
});
