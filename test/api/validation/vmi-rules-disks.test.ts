/** VMI admission rules: disks and volumes (the cases' shape and check: vmi-rule-case.ts). */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type { Disk, VirtualMachineInstance } from '../../../src/api/generated/types';
import { admit } from '../../../src/api/validation/admission';
import { fixture } from '../../support/fixtures';
import { expectVmiRuleError, type VmiRuleCase } from './vmi-rule-case';

const hotplug = (v: VirtualMachineInstance, disk: Omit<Disk, 'name'>) => {
  v.spec.domain.devices.disks?.push({ ...disk, name: 'hp' });
  v.spec.volumes?.push({ name: 'hp', persistentVolumeClaim: { claimName: 'c', hotpluggable: true } });
};

const cases: VmiRuleCase[] = [
  // Disks and volumes
  {
    name: 'disk without a matching volume',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks?.push({ name: 'orphan', disk: { bus: 'virtio' } });
    },
    path: 'spec.domain.devices.disks[1].name',
    message: "spec.domain.devices.disks[1].Name 'orphan' not found.",
  },
  {
    name: 'disk showing a memory dump volume',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.volumes?.push({ name: 'md', memoryDump: { claimName: 'md', hotpluggable: true } });
      v.spec.domain.devices.disks?.push({ name: 'md', disk: { bus: 'virtio' } });
    },
    path: 'spec.domain.devices.disks[1].name',
    message: "spec.domain.devices.disks[1].Name 'md' not found.",
  },
  {
    name: 'memory dump volume read-only',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.volumes?.push({
        name: 'md',
        memoryDump: { claimName: 'md', hotpluggable: true, readOnly: true },
      });
    },
    path: 'spec.volumes[1].memoryDump.readOnly',
    message:
      'spec.volumes[1].memoryDump.readOnly is not supported by kubevirt-ts: a memory dump volume receives the dump: it cannot be read-only',
  },
  {
    name: 'duplicate disk names',
    file: 'vmi-cloudinit-nocloud.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks![2].name = 'containerdisk';
    },
    path: 'spec.domain.devices.disks[2].name',
    message: 'spec.domain.devices.disks[2] and spec.domain.devices.disks[0] must not have the same Name.',
  },
  {
    name: 'duplicate volume names',
    file: 'vmi-cloudinit-nocloud.yaml',
    mutate: (v) => {
      v.spec.volumes![2].name = 'containerdisk';
    },
    path: 'spec.volumes[2].name',
    message: 'spec.volumes[2] and spec.volumes[0] must not have the same Name.',
  },
  {
    name: 'two targets on one disk',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks![0].cdrom = { bus: 'sata' };
    },
    path: 'spec.domain.devices.disks[0]',
    message: 'spec.domain.devices.disks[0] can only have a single target type defined',
  },
  {
    name: 'IDE bus',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks![0].disk = { bus: 'ide' };
    },
    path: 'spec.domain.devices.disks[0].disk.bus',
    message: 'IDE bus is not supported',
  },
  {
    name: 'unknown bus',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks![0].disk = { bus: 'floppy' };
    },
    path: 'spec.domain.devices.disks[0].disk.bus',
    message:
      'spec.domain.devices.disks[0] is set with an unrecognized bus floppy, must be one of: [virtio scsi sata usb]',
  },
  {
    name: 'virtio CD-ROM',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks![0] = { name: 'containerdisk', cdrom: { bus: 'virtio' } };
    },
    path: 'spec.domain.devices.disks[0].cdrom.bus',
    message: 'Bus type virtio is invalid for CD-ROM device',
  },
  {
    name: 'read-only SATA disk',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks![0].disk = { bus: 'sata', readonly: true };
    },
    path: 'spec.domain.devices.disks[0].disk.bus',
    message: 'sata hard-disks do not support read-only.',
  },
  {
    name: 'boot order zero',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks![0].bootOrder = 0;
    },
    path: 'spec.domain.devices.disks[0].bootOrder',
    message: 'spec.domain.devices.disks[0] must have a boot order > 0, if supplied',
  },
  {
    name: 'duplicate boot order',
    file: 'vmi-cloudinit-nocloud.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks![0].bootOrder = 1;
      v.spec.domain.devices.disks![1].bootOrder = 1;
    },
    path: 'spec.domain.devices.disks[1].bootOrder',
    message: 'Boot order for spec.domain.devices.disks[1].bootOrder already set for a different device.',
  },
  {
    name: 'interface boot order clashing with a disk',
    file: 'vmi-migratable.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks![0].bootOrder = 1;
      v.spec.domain.devices.interfaces![0].bootOrder = 1;
    },
    path: 'spec.domain.devices.interfaces[0].bootOrder',
    message: 'Boot order for spec.domain.devices.interfaces[0].bootOrder already set for a different device.',
  },
  {
    name: 'invalid cache mode',
    file: 'vmi-pvc.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks![0].cache = 'unsafe';
    },
    path: 'spec.domain.devices.disks[0].cache',
    message: 'spec.domain.devices.disks[0].cache has invalid value unsafe',
  },
  {
    name: 'invalid io mode',
    file: 'vmi-pvc.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks![0].io = 'io_uring';
    },
    path: 'spec.domain.devices.disks[0].io',
    message:
      'Disk IO mode for spec.domain.devices.disks[0].io is not supported. Supported modes are: native, threads.',
  },
  {
    name: 'invalid error policy',
    file: 'vmi-pvc.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks![0].errorPolicy = 'retry';
    },
    path: 'spec.domain.devices.disks[0].errorPolicy',
    message: 'spec.domain.devices.disks[0].errorPolicy has invalid value "retry"',
  },
  {
    name: 'serial with forbidden characters',
    file: 'vmi-pvc.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks![0].serial = 'a b';
    },
    path: 'spec.domain.devices.disks[0].serial',
    message:
      'spec.domain.devices.disks[0] must be made up of the following characters [A-Za-z0-9_.+-], if specified',
  },
  {
    name: 'block size not a power of two',
    file: 'vmi-pvc.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks![0].blockSize = { custom: { logical: 512, physical: 1000 } };
    },
    path: 'spec.domain.devices.disks[0].blockSize.custom.physical',
    message: 'Provided size of 1000 is not a power of 2',
  },
  {
    name: 'logical block size above physical',
    file: 'vmi-pvc.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks![0].blockSize = { custom: { logical: 4096, physical: 512 } };
    },
    path: 'spec.domain.devices.disks[0].blockSize.custom.logical',
    message: 'Logical size 4096 must be the same or less than the physical size of 512',
  },
  {
    name: 'custom block size with volume matching',
    file: 'vmi-pvc.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks![0].blockSize = {
        custom: { logical: 512, physical: 512 },
        matchVolume: {},
      };
    },
    path: 'spec.domain.devices.disks[0].blockSize',
    message: "Block size matching can't be enabled together with a custom value",
  },
  {
    name: 'LUN on a container disk',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks![0] = { name: 'containerdisk', lun: {} };
    },
    path: 'spec.domain.devices.disks[0].lun',
    message:
      'spec.domain.devices.disks[0].lun can only be mapped to a DataVolume or PersistentVolumeClaim volume.',
  },
  {
    name: 'disk name that is not a DNS label',
    file: 'vmi-pvc.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks![0].name = 'PVC_Disk';
      v.spec.volumes![0].name = 'PVC_Disk';
    },
    path: 'spec.domain.devices.disks[0].name',
    message:
      "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
  },
  {
    name: 'volume with two sources',
    file: 'vmi-pvc.yaml',
    mutate: (v) => {
      v.spec.volumes![0].emptyDisk = { capacity: '1Gi' };
    },
    path: 'spec.volumes[0]',
    message: 'spec.volumes[0] must have exactly one source type set',
  },
  {
    name: 'cloud-init without user or network data',
    file: 'vmi-cloudinit-nocloud.yaml',
    mutate: (v) => {
      v.spec.volumes![1].cloudInitNoCloud = {};
    },
    path: 'spec.volumes[1].cloudInitNoCloud',
    message:
      'spec.volumes[1].cloudInitNoCloud must have at least one userdatasource or one networkdatasource set.',
  },
  {
    name: 'cloud-init with two user data sources',
    file: 'vmi-cloudinit-nocloud.yaml',
    mutate: (v) => {
      v.spec.volumes![1].cloudInitNoCloud!.userDataBase64 = 'I2Nsb3VkLWNvbmZpZwo=';
    },
    path: 'spec.volumes[1].cloudInitNoCloud',
    message: 'spec.volumes[1].cloudInitNoCloud must have only one userdatasource set.',
  },
  {
    name: 'cloud-init user data over 2 KiB',
    file: 'vmi-cloudinit-nocloud.yaml',
    mutate: (v) => {
      v.spec.volumes![1].cloudInitNoCloud!.userData = `#!/bin/sh\n${'x'.repeat(2100)}`;
    },
    path: 'spec.volumes[1].cloudInitNoCloud',
    message:
      'spec.volumes[1].cloudInitNoCloud userdata exceeds 2048 byte limit. Should use UserDataSecretRef for larger data.',
  },
  {
    name: 'cloud-init invalid base64',
    file: 'vmi-cloudinit-nocloud.yaml',
    mutate: (v) => {
      v.spec.volumes![1].cloudInitNoCloud = { userDataBase64: 'not base64!' };
    },
    path: 'spec.volumes[1].cloudInitNoCloud.userDataBase64',
    message:
      'spec.volumes[1].cloudInitNoCloud.userDataBase64.cloudInitNoCloud.userDataBase64 is not a valid base64 value.',
  },
  {
    name: 'host disk type',
    file: 'vmi-hostdisk.yaml',
    gates: ['HostDisk'],
    mutate: (v) => {
      v.spec.volumes![0].hostDisk!.type = 'Directory';
    },
    path: 'spec.volumes[0].hostDisk.type',
    message:
      "spec.volumes[0].hostDisk.type has invalid value 'Directory', allowed are 'Disk' or 'DiskOrCreate'",
  },
  {
    name: 'host disk capacity with type Disk',
    file: 'vmi-hostdisk.yaml',
    gates: ['HostDisk'],
    mutate: (v) => {
      v.spec.volumes![0].hostDisk!.type = 'Disk';
    },
    path: 'spec.volumes[0].hostDisk.capacity',
    message:
      "spec.volumes[0].hostDisk.capacity is allowed to pass only with spec.volumes[0].hostDisk.type equal to 'DiskOrCreate'",
  },
  {
    name: 'host disk relative path',
    file: 'vmi-hostdisk.yaml',
    gates: ['HostDisk'],
    mutate: (v) => {
      v.spec.volumes![0].hostDisk!.path = '/var/data/../etc/shadow';
    },
    path: 'spec.volumes[0].hostDisk.path',
    message: 'spec.volumes[0].hostDisk.path must be an absolute path to a file without relative components',
  },
  {
    name: 'host disk without the gate',
    file: 'vmi-hostdisk.yaml',
    mutate: () => {},
    path: 'spec.volumes[0]',
    message: 'HostDisk feature gate is not enabled',
  },
  {
    name: 'container disk path to root',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.volumes![0].containerDisk!.path = '/';
    },
    path: 'spec.volumes[0].containerDisk',
    message: 'spec.volumes[0].containerDisk must not point to root',
  },
  // Hotplug volumes (upstream's storage hotplug admitter; what kubevirt-ts attaches live).
  {
    name: 'hotplug disk on the sata bus',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => hotplug(v, { disk: { bus: 'sata' } }),
    path: 'spec.domain.devices.disks[1].disk.bus',
    message:
      'hotplugged Disk hp does not use a scsi or virtio bus (spec.domain.devices.disks[1].disk.bus: sata)',
  },
  {
    name: 'hotplug disk with a boot order',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => hotplug(v, { disk: { bus: 'virtio' }, bootOrder: 2 }),
    path: 'spec.domain.devices.disks[1].bootOrder',
    message: "Hotplugged disk hp can't define a boot order",
  },
  {
    name: 'CD-ROM media on the virtio bus',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => hotplug(v, { cdrom: { bus: 'virtio' } }),
    path: 'spec.domain.devices.disks[1].cdrom.bus',
    message: 'Bus type virtio is invalid for CD-ROM device',
  },
  {
    name: 'empty CD-ROM without the DeclarativeHotplugVolumes gate',
    file: 'vmi-containerdisk.yaml',
    disabledGates: ['DeclarativeHotplugVolumes'],
    mutate: (v) => {
      v.spec.domain.devices.disks?.push({ name: 'cd', cdrom: { bus: 'sata' } });
    },
    path: 'spec.domain.devices.disks[1].name',
    message: 'DeclarativeHotplugVolumes feature gate not enabled, cannot define an empty CD-ROM disk',
  },
  {
    name: 'hotplug volume with hotplug disabled',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      hotplug(v, { disk: { bus: 'scsi' } });
      v.spec.domain.devices.disableHotplug = true;
    },
    path: 'spec.volumes[1].persistentVolumeClaim.hotpluggable',
    message: 'spec.volumes[1].persistentVolumeClaim.hotpluggable: spec.domain.devices.disableHotplug is true',
  },
  {
    name: 'hotplug volume without a hotplug gate',
    file: 'vmi-containerdisk.yaml',
    disabledGates: ['DeclarativeHotplugVolumes'],
    mutate: (v) => hotplug(v, { disk: { bus: 'scsi' } }),
    path: 'spec.volumes[1].persistentVolumeClaim.hotpluggable',
    message:
      'spec.volumes[1].persistentVolumeClaim.hotpluggable: enable the DeclarativeHotplugVolumes or HotplugVolumes feature gate',
  },
];

describe('VMI validation rules on mutated fixture manifests: disks and volumes', () => {
  it.each(cases)('$name ($file)', expectVmiRuleError);

  it('admits a CD-ROM with hotplugged media, and an empty one (upstream DeclarativeHotplugVolumes)', () => {
    const vmi = fixture<VirtualMachineInstance>('vmi-containerdisk.yaml');
    hotplug(vmi, { cdrom: { bus: 'sata' } });
    vmi.spec.domain.devices.disks?.push({ name: 'empty', cdrom: { bus: 'scsi' } });
    const { errors } = admit(vmi as never, createClusterConfig({}, { hostArchitecture: 'amd64' }));
    expect(errors).toEqual([]);
  });
});
