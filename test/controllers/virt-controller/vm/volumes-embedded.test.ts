import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachineInstance } from '../../../../src/api/generated/types';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import { PodType, VirtualMachineType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { PersistentVolumeClaimType } from '../../../../src/controllers/virt-controller/services/volumes';
import { type Harness, startHarness, waitFor } from '../services/embedded-harness';

const vm: VirtualMachine = {
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachine',
  metadata: { name: 'disky', namespace: 'default' },
  spec: {
    runStrategy: 'Always',
    template: {
      spec: {
        domain: {
          devices: { disks: [{ name: 'root', disk: { bus: 'virtio' } }] },
          resources: { requests: { memory: '64Mi' } },
        },
        volumes: [{ name: 'root', persistentVolumeClaim: { claimName: 'root-disk' } }],
      },
    },
  },
};

describe('VMs whose PVC is missing or unbound (embedded store)', () => {
  let h: Harness;
  let bound = false;
  beforeEach(async () => {
    // The simulated scheduler waits while the claim is unbound, as kube-scheduler does.
    h = await startHarness({
      volumes: true,
      types: [PersistentVolumeClaimType],
      sim: { hold: () => bound === false },
    });
    bound = false;
  });
  afterEach(async () => {
    await h.stop();
  });
  const getVm = () => h.store.get<VirtualMachine & KubeObject>(VirtualMachineType, 'disky', 'default');
  const printable = (s: string) =>
    waitFor(s, async () => {
      const x = await getVm();
      return x.status?.printableStatus === s ? x : undefined;
    });

  it('ErrorPvcNotFound without a pod, WaitingForVolumeBinding once it exists, Running once bound', async () => {
    await h.store.create(VirtualMachineType, vm as KubeObject);
    const v = await printable('ErrorPvcNotFound');
    expect(v.status!.conditions).toContainEqual(
      expect.objectContaining({
        type: 'Synchronized',
        status: 'False',
        reason: 'FailedPvcNotFound',
        message: 'PVC default/root-disk does not exist, waiting for it to appear',
      }),
    );
    const vmi = await h.store.get<VirtualMachineInstance & KubeObject>(VmiResource, 'disky', 'default');
    expect(vmi.status!.phase).toBe('Pending');
    expect((await h.store.list(PodType, { namespace: 'default' })).items).toHaveLength(0);

    const pvc = (await h.store.create(PersistentVolumeClaimType, {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'root-disk', namespace: 'default' },
      spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } },
    } as KubeObject)) as KubeObject;
    await h.store.updateStatus(PersistentVolumeClaimType, {
      ...pvc,
      status: { phase: 'Pending' },
    } as KubeObject);
    await printable('WaitingForVolumeBinding');

    const cur = await h.store.get<KubeObject>(PersistentVolumeClaimType, 'root-disk', 'default');
    await h.store.updateStatus(PersistentVolumeClaimType, {
      ...cur,
      status: { phase: 'Bound' },
    } as KubeObject);
    bound = true;
    h.sim.poke();
    await printable('Running');
  });
});
