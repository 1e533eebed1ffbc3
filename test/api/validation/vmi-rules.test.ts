/**
 * VMI admission rules: scheduling and per-architecture rule cases (the other areas' cases are
 * in vmi-rules-*.test.ts; their shape and check in vmi-rule-case.ts), and checks of
 * whole objects.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { admit } from '../../../src/api/validation/admission';
import { validateVirtualMachineInstance } from '../../../src/api/validation/vmi';
import { fixture } from '../../support/fixtures';
import { expectVmiRuleError, type VmiRuleCase } from './vmi-rule-case';

const cases: VmiRuleCase[] = [
  // Scheduling
  {
    name: 'required node affinity without terms',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.affinity = {
        nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [] } },
      };
    },
    path: 'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms',
    message:
      'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least one node selector term',
  },
  {
    name: 'node affinity In without values',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.affinity = {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [{ matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In' }] }],
          },
        },
      };
    },
    path: 'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values',
    message:
      "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
  },
  {
    name: 'pod anti-affinity weight out of range',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.affinity = {
        podAntiAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            { weight: 0, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname' } },
          ],
        },
      };
    },
    path: 'spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight',
    message:
      'spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100',
  },
  {
    name: 'pod affinity without a topology key',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.affinity = {
        podAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: '' }] },
      };
    },
    path: 'spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey',
    message:
      'spec.affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey: Required value: can not be empty',
  },
  // Per-architecture rules
  {
    name: 'arm64 with BIOS boot',
    file: 'vmi-arm64.yaml',
    arch: 'arm64',
    mutate: (v) => {
      v.spec.domain.firmware = { bootloader: { bios: {} } };
    },
    path: 'spec.domain.firmware.bootloader.bios',
    message: 'Arm64 does not support bios boot, please change to uefi boot',
  },
  {
    name: 'arm64 with UEFI secure boot',
    file: 'vmi-arm64.yaml',
    arch: 'arm64',
    mutate: (v) => {
      v.spec.domain.firmware = { bootloader: { efi: { secureBoot: true } } };
      v.spec.domain.features = { smm: {} };
    },
    path: 'spec.domain.firmware.bootloader.efi.secureboot',
    message: 'UEFI secure boot is currently not supported on aarch64 Arch',
  },
  {
    name: 'arm64 with a named CPU model',
    file: 'vmi-arm64.yaml',
    arch: 'arm64',
    mutate: (v) => {
      v.spec.domain.cpu = { model: 'cortex-a72' };
    },
    path: 'spec.domain.cpu.model',
    message: 'currently, host-passthrough is the only model supported on Arm64',
  },
  {
    name: 'arm64 with a SATA disk',
    file: 'vmi-arm64.yaml',
    arch: 'arm64',
    mutate: (v) => {
      v.spec.domain.devices.disks![0].disk = { bus: 'sata' };
    },
    path: 'spec.domain.devices.disks[0].disk.bus',
    message: 'Arm64 not support this disk bus type, please use virtio or scsi',
  },
  {
    name: 'arm64 with a watchdog',
    file: 'vmi-arm64.yaml',
    arch: 'arm64',
    mutate: (v) => {
      v.spec.domain.devices.watchdog = { name: 'wd', i6300esb: {} };
    },
    path: 'spec.domain.devices.watchdog',
    message: 'Arm64 not support Watchdog device',
  },
  {
    name: 'amd64 with a diag288 watchdog',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.watchdog = { name: 'wd', diag288: {} };
    },
    path: 'spec.domain.devices.watchdog',
    message: 'amd64 only supports I6300ESB watchdog device',
  },
  {
    name: 'amd64 with an unsupported video model',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.video = { type: 'qxl' };
    },
    path: 'spec.domain.devices.video.type',
    message: "video model 'qxl' is not supported on amd64 architecture",
  },
  {
    name: 'empty CD-ROM with declarative hotplug disabled',
    file: 'vmi-containerdisk.yaml',
    disabledGates: ['DeclarativeHotplugVolumes'],
    mutate: (v) => {
      v.spec.domain.devices.disks!.push({ name: 'installer', cdrom: { bus: 'sata' } });
    },
    path: 'spec.domain.devices.disks[1].name',
    message: 'DeclarativeHotplugVolumes feature gate not enabled, cannot define an empty CD-ROM disk',
  },
  {
    name: 'dedicated IO thread on a SATA disk',
    file: 'vmi-pvc.yaml',
    mutate: (v) => {
      v.spec.domain.devices.disks![0] = { name: 'pvcdisk', disk: { bus: 'sata' }, dedicatedIOThread: true };
    },
    path: 'spec.domain.devices.disks[0]',
    message: 'IOThreads are not supported for disks on a sata bus',
  },
  {
    name: 'supplemental IO thread pool without a count',
    file: 'vmi-pvc.yaml',
    mutate: (v) => {
      v.spec.domain.ioThreadsPolicy = 'supplementalPool';
    },
    path: 'spec.domain.ioThreads.count',
    message: 'the number of iothreads needs to be set and positive for the dedicated policy',
  },
  {
    name: 'ACPI table from a volume that is not a secret',
    file: 'vmi-windows.yaml',
    mutate: (v) => {
      v.spec.domain.firmware!.acpi = { slicNameRef: 'pvcdisk' };
    },
    path: 'spec.acpi.slicNameRef',
    message: 'spec.acpi refers to Volume of unsupported type.',
  },
  {
    name: 'video device without a graphics device',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.video = { type: 'virtio' };
      v.spec.domain.devices.autoattachGraphicsDevice = false;
    },
    path: 'spec.video',
    message: 'Video configuration is not allowed when autoattachGraphicsDevice is set to false',
  },
  {
    name: 'invalid panic device model',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.panicDevices = [{ model: 'isa-debug' }];
    },
    path: 'spec.domain.devices.panicDevices[0].model',
    message: 'invalid PanicDeviceModel(isa-debug)',
  },
  {
    name: 'ACPI table naming no volume',
    file: 'vmi-windows.yaml',
    mutate: (v) => {
      v.spec.domain.firmware!.acpi = { msdmNameRef: 'msdm' };
    },
    path: 'spec.acpi.msdmNameRef',
    message: 'spec.acpi does not have a matching Volume.',
  },
];

describe('VMI validation rules on mutated fixture manifests', () => {
  it.each(cases)('$name ($file)', expectVmiRuleError);

  it('versioned q35 machine types match the glob allow-list', () => {
    for (const type of ['q35', 'pc-q35-7.2', 'pc-q35-rhel9.4.0']) {
      const vmi = fixture<VirtualMachineInstance>('vmi-containerdisk.yaml');
      vmi.spec.domain.machine = { type };
      expect(admit(vmi as never, createClusterConfig({}, { hostArchitecture: 'amd64' })).errors).toEqual([]);
    }
  });

  it('hugepages with only guest memory are checked against the guest size', () => {
    const vmi = fixture<VirtualMachineInstance>('vmi-containerdisk.yaml');
    vmi.spec.domain.memory = { guest: '128Mi', hugepages: { pageSize: '2Mi' } };
    expect(admit(vmi as never, createClusterConfig({}, { hostArchitecture: 'amd64' })).errors).toEqual([]);
  });

  it('an empty CD-ROM is accepted while DeclarativeHotplugVolumes (Beta) is on', () => {
    const vmi = fixture<VirtualMachineInstance>('vmi-containerdisk.yaml');
    vmi.spec.domain.devices.disks!.push({ name: 'installer', cdrom: { bus: 'sata' } });
    expect(admit(vmi as never, createClusterConfig({}, { hostArchitecture: 'amd64' })).errors).toEqual([]);
  });

  it('a volume no disk uses is rejected when validating an undefaulted VMI', () => {
    const vmi = fixture<VirtualMachineInstance>('vmi-cloudinit-nocloud.yaml');
    vmi.spec.domain.devices.disks!.pop();
    const errors = validateVirtualMachineInstance(
      vmi,
      createClusterConfig({}, { hostArchitecture: 'amd64' }),
    );
    expect(errors.map((e) => [e.path, e.message])).toContainEqual([
      'spec.domain.volumes[2].name',
      "spec.domain.volumes[2].name 'emptydisk' not found.",
    ]);
  });

  it('reports every error of an object at once', () => {
    const vmi = fixture<VirtualMachineInstance>('vmi-cloudinit-nocloud.yaml');
    vmi.spec.domain.devices.disks![0].disk = { bus: 'ide' };
    vmi.spec.domain.devices.disks![1].cache = 'unsafe';
    vmi.spec.hostname = 'Bad_Host';
    const { errors } = admit(vmi as never, createClusterConfig({}, { hostArchitecture: 'amd64' }));
    expect(errors.map((e) => e.path)).toEqual([
      'spec.hostname',
      'spec.domain.devices.disks[0].disk.bus',
      'spec.domain.devices.disks[1].cache',
    ]);
  });
});
