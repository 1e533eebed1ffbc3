/**
 * inferFromVolume (upstream pkg/instancetype/infer) on an embedded store: from a claim's
 * labels, from a DataVolumeTemplate's source claim, the Reject and Ignore failure
 * policies; and through virt-api's VM webhooks: the mutator's patch names the inferred
 * instance type, the validator expands the VM with it.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type { VirtualMachine } from '../../../src/api/generated/types';
import { InferLabels, inferMatchers } from '../../../src/controllers/common/instancetype-infer';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import {
  PersistentVolumeClaimType,
  VirtualMachineClusterInstancetypeType,
} from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import type { AdmissionRequest } from '../../../src/controllers/virt-api/admission-review';
import { Webhooks } from '../../../src/controllers/virt-api/webhooks';

const claim = (name: string, labels: Record<string, string>) =>
  ({
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: 'default', labels },
    spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
  }) as KubeObject;

const vm = (spec: Partial<VirtualMachine['spec']>, volume: Record<string, unknown>): VirtualMachine => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachine',
  metadata: { name: 'vm1', namespace: 'default' },
  spec: {
    runStrategy: 'Halted',
    template: {
      spec: {
        domain: { devices: { disks: [{ name: 'root', disk: {} }] } },
        volumes: [{ name: 'root', ...volume }],
      },
    },
    ...spec,
  },
});

describe('inferFromVolume', () => {
  let store: EmbeddedStore;
  beforeEach(async () => {
    store = await EmbeddedStore.open({});
    await store.create(
      PersistentVolumeClaimType,
      claim('labelled', {
        [InferLabels.instancetype]: 'u1.small',
        [InferLabels.preference]: 'fedora',
        [InferLabels.preferenceKind]: 'VirtualMachinePreference',
      }),
    );
    await store.create(PersistentVolumeClaimType, claim('bare', {}));
  });
  afterEach(async () => {
    await store.close();
  });

  it("takes the instance type and preference from the claim's labels", async () => {
    const r = await inferMatchers(
      store,
      vm(
        { instancetype: { inferFromVolume: 'root' }, preference: { inferFromVolume: 'root' } },
        { persistentVolumeClaim: { claimName: 'labelled' } },
      ),
    );
    expect(r.errors).toEqual([]);
    expect(r.vm.spec.instancetype).toEqual({ name: 'u1.small' });
    expect(r.vm.spec.preference).toEqual({ name: 'fedora', kind: 'VirtualMachinePreference' });
  });

  it('follows a DataVolumeTemplate to its source claim', async () => {
    const v = vm({ instancetype: { inferFromVolume: 'root' } }, { dataVolume: { name: 'root-dv' } });
    v.spec.dataVolumeTemplates = [
      {
        metadata: { name: 'root-dv' },
        spec: { source: { pvc: { name: 'labelled', namespace: 'default' } } },
      },
    ];
    expect((await inferMatchers(store, v)).vm.spec.instancetype).toEqual({ name: 'u1.small' });
  });

  it("fails with upstream's reason unless the policy ignores it, which drops the matcher", async () => {
    const bare = vm(
      { instancetype: { inferFromVolume: 'root' } },
      { persistentVolumeClaim: { claimName: 'bare' } },
    );
    expect((await inferMatchers(store, bare)).errors).toEqual([
      {
        path: 'spec.instancetype.inferFromVolume',
        type: 'FieldValueInvalid',
        message:
          'failed to infer the instancetype: unable to find required instancetype.kubevirt.io/default-instancetype label on the volume',
      },
    ]);
    const disk = vm(
      {
        instancetype: {
          inferFromVolume: 'root',
          inferFromVolumeFailurePolicy: 'IgnoreInferFromVolumeFailure',
        },
      },
      { containerDisk: { image: 'x' } },
    );
    const ignored = await inferMatchers(store, disk);
    expect(ignored.errors).toEqual([]);
    expect(ignored.vm.spec.instancetype).toBeUndefined();
    // A missing volume is never ignorable.
    const missing = vm(
      {
        instancetype: {
          inferFromVolume: 'nope',
          inferFromVolumeFailurePolicy: 'IgnoreInferFromVolumeFailure',
        },
      },
      { containerDisk: { image: 'x' } },
    );
    expect((await inferMatchers(store, missing)).errors[0]?.message).toBe(
      'failed to infer the instancetype: unable to find volume nope to infer defaults',
    );
  });

  it("virt-api's VM webhooks: the mutator's patch names the inferred instance type; the validator expands with it", async () => {
    await store.create(VirtualMachineClusterInstancetypeType, {
      apiVersion: 'instancetype.kubevirt.io/v1beta1',
      kind: 'VirtualMachineClusterInstancetype',
      metadata: { name: 'u1.small' },
      spec: { cpu: { guest: 1 }, memory: { guest: '256Mi' } },
    } as KubeObject);
    const object = vm(
      { instancetype: { inferFromVolume: 'root' } },
      { persistentVolumeClaim: { claimName: 'labelled' } },
    );
    const req = (o: unknown): AdmissionRequest => ({
      uid: 'r1',
      kind: { group: 'kubevirt.io', version: 'v1', kind: 'VirtualMachine' },
      resource: { group: 'kubevirt.io', version: 'v1', resource: 'virtualmachines' },
      operation: 'CREATE',
      namespace: 'default',
      userInfo: { username: 'alice' },
      object: o as Record<string, unknown>,
    });
    const ctx = {
      config: () => createClusterConfig({}, { hostArchitecture: 'amd64' }),
      client: store,
      privileged: () => false,
    };
    const mutated = await Webhooks['/virtualmachines-mutate'](req(object), ctx);
    expect(mutated.allowed).toBe(true);
    expect(mutated.allowed && mutated.patch).toEqual(
      expect.arrayContaining([
        { op: 'remove', path: '/spec/instancetype/inferFromVolume' },
        { op: 'add', path: '/spec/instancetype/name', value: 'u1.small' },
        { op: 'add', path: '/spec/instancetype/kind', value: 'VirtualMachineClusterInstancetype' },
      ]),
    );
    // The instance type gives the memory: a template setting it conflicts, as upstream.
    const conflicting = structuredClone(object);
    conflicting.spec.template.spec!.domain.memory = { guest: '1Gi' };
    const refused = await Webhooks['/virtualmachines-validate'](req(conflicting), ctx);
    expect(refused.allowed).toBe(false);
    expect(JSON.stringify(refused)).toContain('conflicts with selected instance type');
  });
});
