/**
 * Declarative volume hotplug (upstream pkg/storage/hotplug): the JSON patch the VM
 * controller sends a running VMI when the VM's template gains or loses a hotpluggable
 * volume, and the RestartRequired comparison that leaves hotplug volumes out.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachineInstance } from '../../../../src/api/generated/types';
import {
  declarativeVolumePatch,
  withoutHotplugVolumes,
} from '../../../../src/controllers/virt-controller/vm/hotplug-volumes';

const root = { name: 'root', containerDisk: { image: 'x/y:1' } };
const hp = { name: 'data', persistentVolumeClaim: { claimName: 'data', hotpluggable: true } };
const rootDisk = { name: 'root', disk: { bus: 'virtio' } };
const hpDisk = { name: 'data', disk: { bus: 'scsi' }, serial: 'S1' };

const vm = (volumes: object[], disks: object[]): VirtualMachine =>
  ({
    spec: { template: { spec: { domain: { devices: { disks } }, volumes } } },
  }) as unknown as VirtualMachine;
const vmi = (volumes: object[], disks: object[], status: object = {}): VirtualMachineInstance =>
  ({
    spec: { domain: { devices: { disks } }, volumes },
    status: { phase: 'Running', ...status },
  }) as unknown as VirtualMachineInstance;

describe('declarativeVolumePatch', () => {
  it('adds a template hotplug volume and its disk to the running VMI, testing the old lists', () => {
    const ops = declarativeVolumePatch(vm([root, hp], [rootDisk, hpDisk]), vmi([root], [rootDisk]));
    expect(ops).toEqual([
      { op: 'test', path: '/spec/volumes', value: [root] },
      { op: 'replace', path: '/spec/volumes', value: [root, hp] },
      { op: 'test', path: '/spec/domain/devices/disks', value: [rootDisk] },
      { op: 'replace', path: '/spec/domain/devices/disks', value: [rootDisk, hpDisk] },
    ]);
  });

  it('removes a hotplug volume the template dropped; leaves other volumes alone', () => {
    const ops = declarativeVolumePatch(vm([root], [rootDisk]), vmi([root, hp], [rootDisk, hpDisk]));
    expect(ops?.[1]).toEqual({ op: 'replace', path: '/spec/volumes', value: [root] });
    expect(ops?.[3]).toEqual({ op: 'replace', path: '/spec/domain/devices/disks', value: [rootDisk] });
    // A non-hotplug volume the template dropped is a restart's business, not hotplug's.
    expect(declarativeVolumePatch(vm([], []), vmi([root], [rootDisk]))).toBeUndefined();
  });

  it('waits for an earlier removal to finish (a status entry left) before adding again', () => {
    const detaching = { volumeStatus: [{ name: 'data', target: '', phase: 'Detaching' }] };
    expect(
      declarativeVolumePatch(vm([root, hp], [rootDisk, hpDisk]), vmi([root], [rootDisk], detaching)),
    ).toBe(undefined);
  });

  it('does nothing for a VMI that is not running or already matches', () => {
    expect(
      declarativeVolumePatch(
        vm([root, hp], [rootDisk, hpDisk]),
        vmi([root], [rootDisk], { phase: 'Scheduled' }),
      ),
    ).toBeUndefined();
    expect(
      declarativeVolumePatch(vm([root, hp], [rootDisk, hpDisk]), vmi([root, hp], [rootDisk, hpDisk])),
    ).toBe(undefined);
  });

  it('RestartRequired compares the specs without hotplug volumes', () => {
    const spec = vmi([root, hp], [rootDisk, hpDisk]).spec;
    expect(withoutHotplugVolumes(spec)).toEqual(vmi([root], [rootDisk]).spec);
  });

  describe('CD-ROM media (upstream filterHotplugVMIDisks)', () => {
    const cdDisk = { name: 'cd', cdrom: { bus: 'sata' } };
    const media = { name: 'cd', persistentVolumeClaim: { claimName: 'iso', hotpluggable: true } };

    it('inserting: the volume joins the VMI, the drive it already has stays as it is', () => {
      const ops = declarativeVolumePatch(
        vm([root, media], [rootDisk, cdDisk]),
        vmi([root], [rootDisk, cdDisk]),
      );
      expect(ops?.[1]).toEqual({ op: 'replace', path: '/spec/volumes', value: [root, media] });
      expect(ops?.[3]).toEqual({
        op: 'replace',
        path: '/spec/domain/devices/disks',
        value: [rootDisk, cdDisk],
      });
    });

    it('ejecting: the volume leaves, the drive stays (before, every volume-less disk went with any patch)', () => {
      const ops = declarativeVolumePatch(
        vm([root], [rootDisk, cdDisk]),
        vmi([root, media], [rootDisk, cdDisk]),
      );
      expect(ops?.[1]).toEqual({ op: 'replace', path: '/spec/volumes', value: [root] });
      expect(ops?.[3]).toEqual({
        op: 'replace',
        path: '/spec/domain/devices/disks',
        value: [rootDisk, cdDisk],
      });
      // An empty drive survives another volume's hotplug.
      const other = declarativeVolumePatch(
        vm([root, hp], [rootDisk, cdDisk, hpDisk]),
        vmi([root], [rootDisk, cdDisk]),
      );
      expect(other?.[3]).toEqual({
        op: 'replace',
        path: '/spec/domain/devices/disks',
        value: [rootDisk, cdDisk, hpDisk],
      });
    });

    it('a drive the template dropped goes; a plain disk whose volume changed goes', () => {
      const ops = declarativeVolumePatch(vm([root], [rootDisk]), vmi([root], [rootDisk, cdDisk]));
      expect(ops?.[3]).toEqual({ op: 'replace', path: '/spec/domain/devices/disks', value: [rootDisk] });
      const changed = { ...hp, persistentVolumeClaim: { claimName: 'other', hotpluggable: true } };
      const swap = declarativeVolumePatch(
        vm([root, changed], [rootDisk, hpDisk]),
        vmi([root, hp], [rootDisk, hpDisk]),
      );
      expect(swap?.[3]).toEqual({ op: 'replace', path: '/spec/domain/devices/disks', value: [rootDisk] });
    });

    it('RestartRequired: media in the template and an empty drive in the VMI compare equal', () => {
      expect(withoutHotplugVolumes(vmi([root, media], [rootDisk, cdDisk]).spec)).toEqual(
        vmi([root], [rootDisk, cdDisk]).spec,
      );
    });
  });
});
