/**
 * Local mode's apply admits instance types, preferences and VirtualMachinePools, and a VM
 * naming an instance type or preference is validated expanded with the one of its batch or
 * the one already stored, as virt-api's webhook looks it up.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { applyObjects, loadAndAdmit } from '../../../src/cli/local/apply';
import { ImageStore } from '../../../src/cli/local/images';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import {
  CustomResourceDefinitionType,
  PersistentVolumeClaimType,
  VirtualMachineClusterInstancetypeType,
  VirtualMachineInstancetypeType,
  VirtualMachinePoolType,
  VirtualMachinePreferenceType,
} from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';

const IT = 'instancetype.kubevirt.io/v1beta1';
const instancetype = (name: string, cpu: number, memory: string, cluster = false) => ({
  apiVersion: IT,
  kind: cluster ? 'VirtualMachineClusterInstancetype' : 'VirtualMachineInstancetype',
  metadata: { name },
  spec: { cpu: { guest: cpu }, memory: { guest: memory } },
});
const preference = (name: string) => ({
  apiVersion: IT,
  kind: 'VirtualMachinePreference',
  metadata: { name },
  spec: { devices: { preferredDiskBus: 'virtio', preferredInterfaceModel: 'virtio' } },
});
/** A VM without images (nothing for the image store to check) naming `instancetype`. */
const vm = (name: string, refs: Record<string, unknown>, domain: Record<string, unknown> = {}) => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachine',
  metadata: { name },
  spec: {
    ...refs,
    runStrategy: 'Halted',
    template: {
      spec: {
        domain: { devices: { disks: [{ name: 'scratch', disk: {} }] }, ...domain },
        volumes: [{ name: 'scratch', emptyDisk: { capacity: '16Mi' } }],
      },
    },
  },
});
const pool = {
  apiVersion: 'pool.kubevirt.io/v1beta1',
  kind: 'VirtualMachinePool',
  metadata: { name: 'p' },
  spec: {
    replicas: 2,
    selector: { matchLabels: { app: 'p' } },
    virtualMachineTemplate: {
      metadata: { labels: { app: 'p' } },
      spec: {
        runStrategy: 'Always',
        template: {
          metadata: { labels: { app: 'p' } },
          spec: {
            domain: { devices: {}, memory: { guest: '64Mi' } },
          },
        },
      },
    },
  },
};

describe('loadAndAdmit: instance types, preferences and pools in local mode', () => {
  let dir: string;
  let images: ImageStore;
  let store: EmbeddedStore;
  const write = (name: string, docs: object[]) => {
    const f = join(dir, name);
    writeFileSync(f, docs.map((d) => stringify(d)).join('---\n'));
    return f;
  };
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kvts-apply-it-'));
    images = new ImageStore(join(dir, 'images'));
    store = await EmbeddedStore.open();
  });
  afterEach(async () => {
    await store.close?.();
    rmSync(dir, { recursive: true, force: true });
  });

  it('admits instance types and preferences, and refuses a bad one as the webhook does', async () => {
    const out = await loadAndAdmit(
      [write('a.yaml', [instancetype('small', 1, '128Mi'), preference('virtio')])],
      images,
    );
    expect(out.map((o) => `${o.kind}/${o.metadata?.name}`)).toEqual([
      'VirtualMachineInstancetype/small',
      'VirtualMachinePreference/virtio',
    ]);
    const bad = instancetype('broken', 1, '0', true);
    await expect(loadAndAdmit([write('b.yaml', [bad])], images)).rejects.toThrow(
      'VirtualMachineClusterInstancetype/broken: spec.memory.guest: Invalid value: "0": must be a positive quantity',
    );
  });

  it('admits a VM with the instance type and preference of its batch, applying those first', async () => {
    const refs = {
      instancetype: { kind: 'VirtualMachineInstancetype', name: 'small' },
      preference: { kind: 'VirtualMachinePreference', name: 'virtio' },
    };
    const out = await loadAndAdmit(
      [
        write('vm.yaml', [vm('typed', refs)]),
        write('it.yaml', [instancetype('small', 1, '128Mi'), preference('virtio')]),
      ],
      images,
      true,
      undefined,
      store,
    );
    expect(out.map((o) => o.kind)).toEqual([
      'VirtualMachineInstancetype',
      'VirtualMachinePreference',
      'VirtualMachine',
    ]);
    // Admission checks the expansion but stores the VM as written: virt-controller expands it.
    const admitted = out[2] as { spec: { instancetype?: unknown; template: { spec: { domain: object } } } };
    expect(admitted.spec.instancetype).toEqual(refs.instancetype);
    expect(admitted.spec.template.spec.domain).not.toHaveProperty('cpu');
    expect((await applyObjects(store, out)).map((a) => `${a.kind}/${a.action}`)).toEqual([
      'VirtualMachineInstancetype/created',
      'VirtualMachinePreference/created',
      'VirtualMachine/created',
    ]);
    expect((await store.get<KubeObject>(VirtualMachineInstancetypeType, 'small', 'default')).spec).toEqual({
      cpu: { guest: 1 },
      memory: { guest: '128Mi' },
    });
  });

  it("refuses a VM naming an instance type found nowhere, with upstream's message and field path", async () => {
    const f = write('vm.yaml', [
      vm('lost', { instancetype: { kind: 'VirtualMachineInstancetype', name: 'csmall' } }),
    ]);
    await expect(loadAndAdmit([f], images, true, undefined, store)).rejects.toThrow(
      'VirtualMachine/lost: spec.instancetype: Failure to find instancetype: virtualmachineinstancetypes.instancetype.kubevirt.io "csmall" not found',
    );
    const p = write('vmp.yaml', [vm('lostpref', { preference: { name: 'gone' } })]);
    await expect(loadAndAdmit([p], images, true, undefined, store)).rejects.toThrow(
      'VirtualMachine/lostpref: spec.preference: Failure to find preference: virtualmachineclusterpreferences.instancetype.kubevirt.io "gone" not found',
    );
    // Without a store (up's check before its store is open) the VM is admitted unexpanded.
    expect((await loadAndAdmit([f], images)).map((o) => o.metadata?.name)).toEqual(['lost']);
  });

  it('finds a stored instance type (cluster kind by default) and validates the VM expanded with it', async () => {
    await store.create(
      VirtualMachineClusterInstancetypeType,
      instancetype('c1', 2, '256Mi', true) as KubeObject,
    );
    const ok = write('ok.yaml', [vm('uses-stored', { instancetype: { name: 'c1' } })]);
    expect((await loadAndAdmit([ok], images, true, undefined, store)).map((o) => o.metadata?.name)).toEqual([
      'uses-stored',
    ]);
    // Expanded with the stored one: its memory conflicts with the VM's, as upstream reports.
    const clash = write('clash.yaml', [
      vm('clash', { instancetype: { name: 'c1' } }, { memory: { guest: '64Mi' } }),
    ]);
    await expect(loadAndAdmit([clash], images, true, undefined, store)).rejects.toThrow(
      'VirtualMachine/clash: spec.template.spec.domain.memory: VM field spec.template.spec.domain.memory conflicts with selected instance type',
    );
  });

  it("infers a VM's instance type from its stored claim's label, as virt-api's mutating webhook", async () => {
    await store.create(
      VirtualMachineClusterInstancetypeType,
      instancetype('c1', 2, '256Mi', true) as KubeObject,
    );
    await store.create(PersistentVolumeClaimType, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: {
        name: 'root',
        namespace: 'default',
        labels: { 'instancetype.kubevirt.io/default-instancetype': 'c1' },
      },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    } as KubeObject);
    const inferred = vm('inferred', { instancetype: { inferFromVolume: 'root' } });
    inferred.spec.template.spec.volumes = [
      { name: 'root', persistentVolumeClaim: { claimName: 'root' } } as never,
    ];
    inferred.spec.template.spec.domain.devices.disks = [{ name: 'root', disk: {} }];
    const [out] = await loadAndAdmit([write('inf.yaml', [inferred])], images, true, undefined, store);
    expect((out?.spec as { instancetype?: unknown } | undefined)?.instancetype).toEqual({
      name: 'c1',
      kind: 'VirtualMachineClusterInstancetype',
    });
    // A claim without the label: upstream's reason at the matcher.
    const unlabelled = structuredClone(inferred);
    unlabelled.spec.template.spec.volumes = [
      { name: 'root', persistentVolumeClaim: { claimName: 'none' } } as never,
    ];
    await expect(
      loadAndAdmit([write('bad.yaml', [unlabelled])], images, true, undefined, store),
    ).rejects.toThrow('spec.instancetype.inferFromVolume: failed to infer the instancetype:');
  });

  it("takes the batch's instance type over the stored one of the same name", async () => {
    // The stored `small` has 3 vCPUs, which a spread preference (ratio 2) refuses.
    await store.create(VirtualMachineInstancetypeType, {
      ...instancetype('small', 3, '128Mi'),
      metadata: { name: 'small', namespace: 'default' },
    } as KubeObject);
    const spread = {
      ...preference('spread'),
      spec: { cpu: { preferredCPUTopology: 'spread', spreadOptions: { ratio: 2 } } },
    };
    const refs = {
      instancetype: { kind: 'VirtualMachineInstancetype', name: 'small' },
      preference: { kind: 'VirtualMachinePreference', name: 'spread' },
    };
    await expect(
      loadAndAdmit([write('a.yaml', [spread, vm('v', refs)])], images, true, undefined, store),
    ).rejects.toThrow('VirtualMachine/v: instancetype.spec.cpu.guest: 3 vCPUs provided by the instance type');
    // The batch's own `small` (4 vCPUs) is the one used.
    const out = await loadAndAdmit(
      [write('b.yaml', [vm('v', refs), instancetype('small', 4, '128Mi'), spread])],
      images,
      true,
      undefined,
      store,
    );
    expect(out.map((o) => o.kind)).toEqual([
      'VirtualMachineInstancetype',
      'VirtualMachinePreference',
      'VirtualMachine',
    ]);
  });

  it('admits a VirtualMachinePool and applies it to the store, which serves the kind', async () => {
    const out = await loadAndAdmit([write('pool.yaml', [pool])], images);
    expect(
      (await applyObjects(store, out)).map((a) => `${a.kind}/${a.namespace}/${a.name}/${a.action}`),
    ).toEqual(['VirtualMachinePool/default/p/created']);
    const stored = await store.get<KubeObject & { spec: { replicas: number } }>(
      VirtualMachinePoolType,
      'p',
      'default',
    );
    expect(stored.spec.replicas).toBe(2);
    // A pool whose selector does not match its template is refused with the field path.
    const mismatched = { ...pool, spec: { ...pool.spec, selector: { matchLabels: { app: 'other' } } } };
    await expect(loadAndAdmit([write('bad.yaml', [mismatched])], images)).rejects.toThrow(
      'VirtualMachinePool/p: spec.selector',
    );
  });

  it("checks a pool's template images against the image store, naming the field", async () => {
    const image = 'registry:5000/kubevirt/cirros-container-disk-demo:devel';
    const withDisk = structuredClone(pool) as typeof pool & Record<string, never>;
    Object.assign(withDisk.spec.virtualMachineTemplate.spec.template.spec, {
      domain: { devices: { disks: [{ name: 'containerdisk', disk: {} }] }, memory: { guest: '64Mi' } },
      volumes: [{ name: 'containerdisk', containerDisk: { image } }],
    });
    await expect(loadAndAdmit([write('pool.yaml', [withDisk])], images)).rejects.toThrow(
      `VirtualMachinePool/p.spec.virtualMachineTemplate.spec.template.spec.volumes[0].containerDisk.image: image "${image}" is not in the local image store`,
    );
  });

  it('serves the kinds as built in: a CRD cannot take one over', async () => {
    expect((await store.list(VirtualMachinePreferenceType)).items).toEqual([]);
    const err = await store
      .create(CustomResourceDefinitionType, {
        metadata: { name: 'virtualmachinepools.pool.kubevirt.io' },
        spec: {
          group: 'pool.kubevirt.io',
          scope: 'Namespaced',
          names: { kind: 'VirtualMachinePool', plural: 'virtualmachinepools' },
          versions: [{ name: 'v1beta1', served: true, storage: true }],
        },
      } as KubeObject)
      .catch((e: Error) => e);
    expect((err as Error).message).toMatch(/served by a built-in API/);
  });
});
