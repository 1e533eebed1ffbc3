/**
 * spec.dataVolumeTemplates on the embedded store (the DataVolume controller is not run: the
 * test writes the DataVolumes' status as CDI would): the VM creates its DataVolume, owned
 * by it, waits (Provisioning) while it is filled, shows DataVolumeError when it fails, and
 * starts its VMI once it Succeeded.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DataVolume } from '../../../../src/api/generated/cdi/types';
import type { VirtualMachine } from '../../../../src/api/generated/types';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import { storageClassObject } from '../../../../src/controllers/csi-driver/objects';
import {
  DataVolumeType,
  EventType,
  PersistentVolumeClaimType,
  PodType,
  StorageClassType,
  VirtualMachineType,
} from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { type Harness, startHarness, waitFor } from '../services/embedded-harness';

const vm: VirtualMachine = {
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachine',
  metadata: { name: 'dvm', namespace: 'default' },
  spec: {
    runStrategy: 'Always',
    dataVolumeTemplates: [
      {
        metadata: { name: 'dvm-root', labels: { disk: 'root' } },
        spec: {
          source: { http: { url: 'http://10.0.0.1/disk.qcow2' } },
          storage: { resources: { requests: { storage: '1Gi' } } },
        },
      },
    ],
    template: {
      spec: {
        priorityClassName: 'vip',
        domain: {
          devices: { disks: [{ name: 'root', disk: { bus: 'virtio' } }] },
          resources: { requests: { memory: '64Mi' } },
        },
        volumes: [{ name: 'root', dataVolume: { name: 'dvm-root' } }],
      },
    },
  },
};

describe('virt-controller with the CDI controllers (embedded store)', () => {
  it('the VM’s DataVolume gets its claim and importer pod from the controllers virt-controller hosts', async () => {
    const h = await startHarness({ dataVolumeTemplates: true, dataVolumes: true, types: [StorageClassType] });
    try {
      await h.store.create(StorageClassType, storageClassObject() as KubeObject);
      await h.store.create(VirtualMachineType, vm as KubeObject);
      const pod = await waitFor('importer pod', () =>
        h.store.get(PodType, 'importer-dvm-root', 'default').catch(() => undefined),
      );
      expect(pod.metadata?.labels).toMatchObject({ app: 'containerized-data-importer' });
      const claim = await h.store.get<KubeObject>(PersistentVolumeClaimType, 'dvm-root', 'default');
      expect((claim.spec as { storageClassName?: string }).storageClassName).toBe('kubevirt-ts-local');
      expect(h.errors).toEqual([]);
    } finally {
      await h.stop();
    }
  });
});

describe('VM dataVolumeTemplates (embedded store)', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await startHarness({ dataVolumeTemplates: true });
  });
  afterEach(async () => {
    await h.stop();
    expect(h.errors).toEqual([]);
  });
  const printable = (s: string) =>
    waitFor(`printableStatus ${s}`, async () => {
      const x = await h.store.get<VirtualMachine & KubeObject>(VirtualMachineType, 'dvm', 'default');
      return x.status?.printableStatus === s ? x : undefined;
    });
  const setDv = async (status: DataVolume['status']) => {
    const d = await h.store.get<KubeObject>(DataVolumeType, 'dvm-root', 'default');
    await h.store.updateStatus(DataVolumeType, { ...d, status } as KubeObject);
  };
  const noVmi = async () =>
    expect(await h.store.get(VmiResource, 'dvm', 'default').catch(() => undefined)).toBeUndefined();

  it('creates the DataVolume owned by the VM and starts only once it Succeeded', async () => {
    const created = (await h.store.create(VirtualMachineType, vm as KubeObject)) as KubeObject;
    const dv = await waitFor('DataVolume', () =>
      h.store.get<DataVolume & KubeObject>(DataVolumeType, 'dvm-root', 'default').catch(() => undefined),
    );
    expect(dv.metadata?.ownerReferences).toEqual([
      expect.objectContaining({
        kind: 'VirtualMachine',
        name: 'dvm',
        uid: created.metadata?.uid,
        controller: true,
      }),
    ]);
    expect(dv.metadata?.labels).toEqual({ disk: 'root', 'kubevirt.io/created-by': created.metadata?.uid });
    expect(dv.spec).toEqual({ ...vm.spec.dataVolumeTemplates![0].spec, priorityClassName: 'vip' });

    await setDv({ phase: 'ImportInProgress', conditions: [{ type: 'Bound', status: 'True' }] });
    await printable('Provisioning');
    await noVmi();

    await setDv({
      phase: 'ImportScheduled',
      conditions: [{ type: 'Running', status: 'False', reason: 'Error', message: 'Unable to connect' }],
    });
    await printable('DataVolumeError');
    await noVmi();

    await setDv({ phase: 'Failed' });
    await printable('DataVolumeError');
    await waitFor('FailedDataVolumeImport event', async () =>
      (await h.store.list(EventType, { namespace: 'default' })).items.find(
        (e) => (e as { reason?: string }).reason === 'FailedDataVolumeImport',
      ),
    );

    await setDv({ phase: 'Succeeded', progress: '100.0%' });
    await waitFor('VMI', () => h.store.get(VmiResource, 'dvm', 'default').catch(() => undefined));
    const events = (await h.store.list(EventType, { namespace: 'default' })).items.map(
      (e) => `${(e as { reason?: string }).reason}: ${(e as { message?: string }).message}`,
    );
    expect(events).toContain('SuccessfulDataVolumeCreate: Created DataVolume dvm-root');
  });
});
