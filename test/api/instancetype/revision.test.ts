import { describe, expect, it } from 'vitest';
import {
  buildRevision,
  type ControllerRevision,
  referencedRevisionName,
  revisionInstancetypeSpec,
  revisionName,
  revisionPreferenceSpec,
  sameRevisionData,
  syncStatusRef,
} from '../../../src/api/instancetype/revision';
import { sameJson } from '../../../src/controllers/runtime/same-json';

const it1 = {
  apiVersion: 'instancetype.kubevirt.io/v1beta1',
  kind: 'VirtualMachineInstancetype',
  metadata: {
    name: 'small',
    namespace: 'ns1',
    uid: 'u-1',
    generation: 3,
    resourceVersion: '42',
    labels: { team: 'a' },
    annotations: { note: 'x' },
    finalizers: ['f'],
  },
  spec: { cpu: { guest: 2 }, memory: { guest: '1Gi' } },
};

describe('instance type revisions (pure)', () => {
  it('names a revision as upstream: vm, object, version, uid, generation', () => {
    expect(revisionName('vm1', it1)).toBe('vm1-small-v1beta1-u-1-3');
  });

  it('stores identity and spec, drops labels, annotations and finalizers, labels the revision', () => {
    const rev = buildRevision('vm1', 'ns1', it1);
    expect(rev).toEqual({
      apiVersion: 'apps/v1',
      kind: 'ControllerRevision',
      metadata: {
        name: 'vm1-small-v1beta1-u-1-3',
        namespace: 'ns1',
        labels: {
          'instancetype.kubevirt.io/object-generation': '3',
          'instancetype.kubevirt.io/object-kind': 'VirtualMachineInstancetype',
          'instancetype.kubevirt.io/object-name': 'small',
          'instancetype.kubevirt.io/object-uid': 'u-1',
          'instancetype.kubevirt.io/object-version': 'v1beta1',
        },
      },
      data: {
        apiVersion: 'instancetype.kubevirt.io/v1beta1',
        kind: 'VirtualMachineInstancetype',
        metadata: { name: 'small', namespace: 'ns1', uid: 'u-1', generation: 3, resourceVersion: '42' },
        spec: { cpu: { guest: 2 }, memory: { guest: '1Gi' } },
      },
      revision: 0,
    });
    // A copy: editing the object afterwards does not change the revision.
    const obj = structuredClone(it1);
    const copy = buildRevision('vm1', 'ns1', obj);
    obj.spec.cpu.guest = 4;
    expect(revisionInstancetypeSpec(copy).cpu?.guest).toBe(2);
  });

  it('reads the spec back only from a revision of the right kind and version', () => {
    const rev = buildRevision('vm1', 'ns1', it1);
    expect(revisionInstancetypeSpec(rev)).toEqual({ cpu: { guest: 2 }, memory: { guest: '1Gi' } });
    expect(() => revisionPreferenceSpec(rev)).toThrow(
      'ControllerRevision vm1-small-v1beta1-u-1-3: data.kind VirtualMachineInstancetype is not one of VirtualMachinePreference, VirtualMachineClusterPreference',
    );
    const old: ControllerRevision = {
      ...rev,
      data: { ...(rev.data as object), apiVersion: 'instancetype.kubevirt.io/v1alpha2' },
    };
    expect(() => revisionInstancetypeSpec(old)).toThrow(
      'data.apiVersion instancetype.kubevirt.io/v1alpha2 is not supported',
    );
    expect(() => revisionInstancetypeSpec({ metadata: { name: 'empty' } })).toThrow(
      'ControllerRevision empty: data is empty',
    );
  });

  it('compares two revisions by kind and spec only', () => {
    const a = buildRevision('vm1', 'ns1', it1);
    const b = buildRevision('vm1', 'ns1', { ...it1, metadata: { ...it1.metadata, resourceVersion: '99' } });
    expect(sameRevisionData(a, b, sameJson)).toBe(true);
    const c = buildRevision('vm1', 'ns1', { ...it1, spec: { cpu: { guest: 2 }, memory: { guest: '2Gi' } } });
    expect(sameRevisionData(a, c, sameJson)).toBe(false);
    const d = buildRevision('vm1', 'ns1', { ...it1, kind: 'VirtualMachineClusterInstancetype' });
    expect(sameRevisionData(a, d, sameJson)).toBe(false);
  });

  describe('syncStatusRef (upstream syncStatusWithMatcher)', () => {
    it('a first sync records name and kind and asks for a revision', () => {
      expect(syncStatusRef({ name: 'small', kind: 'VirtualMachineInstancetype' }, undefined)).toEqual({
        ref: { name: 'small', kind: 'VirtualMachineInstancetype' },
        needsRevision: true,
      });
    });
    it('keeps a referenced revision while the matcher names the same object', () => {
      const current = {
        name: 'small',
        kind: 'VirtualMachineInstancetype',
        controllerRevisionRef: { name: 'r1' },
      };
      expect(syncStatusRef({ name: 'small', kind: 'VirtualMachineInstancetype' }, current)).toEqual({
        ref: current,
        needsRevision: false,
      });
    });
    it('drops the reference when the name or kind changes, or when it is cleared', () => {
      const current = {
        name: 'small',
        kind: 'VirtualMachineInstancetype',
        controllerRevisionRef: { name: 'r1' },
      };
      expect(syncStatusRef({ name: 'large', kind: 'VirtualMachineInstancetype' }, current)).toEqual({
        ref: { name: 'large', kind: 'VirtualMachineInstancetype' },
        needsRevision: true,
      });
      expect(
        syncStatusRef({ name: 'small', kind: 'VirtualMachineClusterInstancetype' }, current).needsRevision,
      ).toBe(true);
      expect(
        syncStatusRef(
          { name: 'small', kind: 'VirtualMachineInstancetype' },
          { name: 'small', kind: 'VirtualMachineInstancetype' },
        ).needsRevision,
      ).toBe(true);
    });
    it("takes the matcher's revisionName as the reference", () => {
      const current = {
        name: 'small',
        kind: 'VirtualMachineInstancetype',
        controllerRevisionRef: { name: 'r1' },
      };
      expect(
        syncStatusRef({ name: 'small', kind: 'VirtualMachineInstancetype', revisionName: 'r0' }, current),
      ).toEqual({
        ref: { ...current, controllerRevisionRef: { name: 'r0' } },
        needsRevision: false,
      });
    });
  });

  it('reads from the matcher revisionName first, else the status reference checked against the name', () => {
    expect(referencedRevisionName(undefined, { controllerRevisionRef: { name: 'r1' } })).toBeUndefined();
    expect(
      referencedRevisionName(
        { name: 'small', revisionName: 'r0' },
        { controllerRevisionRef: { name: 'r1' } },
      ),
    ).toEqual({ name: 'r0' });
    expect(referencedRevisionName({ name: 'small' }, { controllerRevisionRef: { name: 'r1' } })).toEqual({
      name: 'r1',
      checkObjectName: 'small',
    });
    expect(referencedRevisionName({ name: 'small' }, { name: 'small' })).toBeUndefined();
  });
});
