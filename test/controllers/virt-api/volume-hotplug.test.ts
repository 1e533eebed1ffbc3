/**
 * virt-api's addvolume/removevolume (upstream v1.9's pkg/virt-api/rest/volumes.go) over
 * real HTTPS on the embedded store, with the bodies upstream's virtctl sends: the VM's
 * template gets the volume and disk (DeclarativeHotplugVolumes), the VMI's spec only for
 * a VMI of its own, and the refusals upstream answers, worded as upstream's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachineInstance } from '../../../src/api/generated/types';
import { addVolumeOptions } from '../../../src/cli/commands/virtctl/volumes';
import {
  startVirtApiHarness,
  type VirtApiHarness,
  VirtualMachineInstanceType,
  VirtualMachineType,
} from './virt-api-harness';
import { vmObjects } from './vm-objects';

const NS = 'ns1';
const base = `/apis/subresources.kubevirt.io/v1/namespaces/${NS}`;
let h: VirtApiHarness;
const { vm, vmi } = vmObjects(() => h, NS);
const add = addVolumeOptions(
  { volumeName: 'data', serial: 'SER1', bus: 'virtio' },
  { persistentVolumeClaim: { claimName: 'data', hotpluggable: true } },
);

beforeAll(async () => {
  h = await startVirtApiHarness();
  await vm('vm1', 'Always', { created: true });
  await vmi('vm1', { phase: 'Running' });
  await vmi('lone', { phase: 'Running' });
});

afterAll(async () => {
  await h?.close();
});

const readVm = async (name: string) => (await h.store.get(VirtualMachineType, name, NS)) as VirtualMachine;
const readVmi = async (name: string) =>
  (await h.store.get(VirtualMachineInstanceType, name, NS)) as VirtualMachineInstance;

describe('addvolume / removevolume', () => {
  it('refuses bodies upstream refuses, with its words', async () => {
    const call = (body: unknown) => h.call('PUT', `${base}/virtualmachines/vm1/addvolume`, body);
    expect((await call({})).body.message).toBe('AddVolumeOptions requires name to be set');
    expect((await call({ name: 'x' })).body.message).toBe('AddVolumeOptions requires disk to not be nil');
    const r = await call({ name: 'x', disk: {} });
    expect(r.code).toBe(400);
    expect(r.body.message).toBe('AddVolumeOptions requires VolumeSource to not be nil');
  });

  it('VM addvolume adds the volume and disk to the template, with 202', async () => {
    const r = await h.call('PUT', `${base}/virtualmachines/vm1/addvolume`, add);
    expect(r.code, JSON.stringify(r.body)).toBe(202);
    const spec = (await readVm('vm1')).spec.template?.spec;
    expect(spec?.volumes).toEqual([
      { name: 'data', persistentVolumeClaim: { claimName: 'data', hotpluggable: true } },
    ]);
    expect(spec?.domain.devices.disks).toEqual([{ name: 'data', disk: { bus: 'virtio' }, serial: 'SER1' }]);
    // The VMI is the VM controller's to change (declarative), not virt-api's.
    expect((await readVmi('vm1')).spec.volumes).toBeUndefined();
  });

  it('refuses a second volume of the same name or source, 409 as upstream', async () => {
    const r = await h.call('PUT', `${base}/virtualmachines/vm1/addvolume`, add);
    expect(r.code).toBe(409);
    expect(r.body.message).toBe(
      'Operation cannot be fulfilled on virtualmachine.kubevirt.io "vm1": Unable to add volume [data] because volume with that name already exists',
    );
    const other = { ...add, name: 'data2', disk: { ...add.disk, name: 'data2' } };
    const r2 = await h.call('PUT', `${base}/virtualmachines/vm1/addvolume`, other);
    expect(r2.body.message).toContain('Unable to add volume source [data] because it already exists');
  });

  it('dry run changes nothing', async () => {
    const before = (await readVm('vm1')).metadata?.resourceVersion;
    const r = await h.call('PUT', `${base}/virtualmachines/vm1/removevolume`, {
      name: 'data',
      dryRun: ['All'],
    });
    expect(r.code).toBe(202);
    expect((await readVm('vm1')).metadata?.resourceVersion).toBe(before);
  });

  it('VM removevolume takes the volume and its disk out', async () => {
    const r = await h.call('PUT', `${base}/virtualmachines/vm1/removevolume`, { name: 'data' });
    expect(r.code).toBe(202);
    const spec = (await readVm('vm1')).spec.template?.spec;
    expect(spec?.volumes).toEqual([]);
    expect(spec?.domain.devices.disks).toEqual([]);
    const again = await h.call('PUT', `${base}/virtualmachines/vm1/removevolume`, { name: 'data' });
    expect(again.code).toBe(409);
    expect(again.body.message).toContain('Unable to remove volume [data] because it does not exist');
  });

  it('VMI addvolume: refused for a VM-owned VMI, applied to a VMI of its own', async () => {
    const owned = await h.call('PUT', `${base}/virtualmachineinstances/vm1/addvolume`, add);
    expect(owned.code).toBe(400);
    expect(owned.body.message).toBe('VMI ns1/vm1 is owned by a VM');
    const r = await h.call('PUT', `${base}/virtualmachineinstances/lone/addvolume`, add);
    expect(r.code, JSON.stringify(r.body)).toBe(202);
    expect((await readVmi('lone')).spec.volumes).toEqual([
      { name: 'data', persistentVolumeClaim: { claimName: 'data', hotpluggable: true } },
    ]);
    const rm = await h.call('PUT', `${base}/virtualmachineinstances/lone/removevolume`, { name: 'data' });
    expect(rm.code).toBe(202);
    expect((await readVmi('lone')).spec.volumes).toEqual([]);
  });

  it('refuses removing a volume that is not hotpluggable', async () => {
    await h.store.patch(
      VirtualMachineInstanceType,
      'lone',
      [
        {
          op: 'replace',
          path: '/spec/volumes',
          value: [{ name: 'root', containerDisk: { image: 'x/y:1' } }],
        },
      ],
      { namespace: NS, type: 'json' },
    );
    const r = await h.call('PUT', `${base}/virtualmachineinstances/lone/removevolume`, { name: 'root' });
    expect(r.code).toBe(409);
    expect(r.body.message).toContain('Unable to remove volume [root] because it is not hotpluggable');
  });

  it('is in discovery', async () => {
    const r = await h.call('GET', '/apis/subresources.kubevirt.io/v1');
    const names = (r.body.resources as { name: string }[]).map((x) => x.name);
    expect(names).toEqual(
      expect.arrayContaining(['virtualmachines/addvolume', 'virtualmachineinstances/removevolume']),
    );
  });
});

describe("virtctl addvolume's options (upstream's)", () => {
  it('defaults the bus to scsi and the serial to the name; refuses other buses and caches', () => {
    const o = addVolumeOptions({ volumeName: 'v' }, { dataVolume: { name: 'v', hotpluggable: true } });
    expect(o.disk).toEqual({ name: 'v', disk: { bus: 'scsi' }, serial: 'v' });
    expect(() => addVolumeOptions({ volumeName: 'v', bus: 'sata' }, {})).toThrow(
      "Invalid bus type 'sata' for disk. Only 'scsi' and 'virtio' are supported.",
    );
    expect(() => addVolumeOptions({ volumeName: 'v', cache: 'unsafe' }, {})).toThrow(
      'error adding volume, invalid cache value unsafe',
    );
  });
});
