/**
 * VMI admission rules: each case mutates a fixture manifest (test/fixtures/manifests) and expects the exact field
 * path and message upstream's admitter reports.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { admit } from '../../../src/api/validation/admission';
import { validateVirtualMachineInstance } from '../../../src/api/validation/vmi';
import { fixture } from '../../support/fixtures';

interface Case {
  name: string;
  file: string;
  mutate: (vmi: VirtualMachineInstance) => void;
  path: string;
  message: string;
  gates?: string[];
  /** Control-plane architecture of the cluster (amd64 unless set). */
  arch?: string;
  /** Feature gates listed in `disabledFeatureGates`. */
  disabledGates?: string[];
  /** The cluster's vmRolloutStrategy (upstream's default, LiveUpdate, unless set). */
  rollout?: 'Stage' | 'LiveUpdate';
}

const cases: Case[] = [
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
  // Memory and CPU
  {
    name: 'no memory at all',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      delete v.spec.domain.memory;
    },
    path: 'spec.domain.memory.guest',
    message:
      "no memory requested, at least one of 'spec.domain.memory.guest', 'spec.domain.memory.hugepages.size' or 'spec.domain.resources.requests.memory' must be set",
  },
  {
    name: 'memory request below 1M',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.resources = { requests: { memory: '512k' } };
    },
    path: 'spec.domain.resources.requests.memory',
    message: "spec.domain.resources.requests.memory '512k': must be greater than or equal to 1M.",
  },
  {
    name: 'memory request above limit',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      delete v.spec.domain.memory;
      v.spec.domain.resources = { requests: { memory: '256Mi' }, limits: { memory: '128Mi' } };
    },
    path: 'spec.domain.resources.requests.memory',
    message:
      "spec.domain.resources.requests.memory '256Mi' is greater than spec.domain.resources.limits.memory '128Mi'",
  },
  {
    // Upstream's validateGuestMemoryLimit only applies under the Stage rollout strategy.
    name: 'guest memory above limit',
    file: 'vmi-containerdisk.yaml',
    rollout: 'Stage',
    mutate: (v) => {
      v.spec.domain.resources = { limits: { memory: '64Mi' } };
    },
    path: 'spec.domain.memory.guest',
    message:
      "spec.domain.memory.guest '128Mi' must be equal to or less than the memory limit spec.domain.resources.limits.memory '64Mi'",
  },
  {
    name: 'negative CPU request',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.resources = { requests: { cpu: '-1' } };
    },
    path: 'spec.domain.resources.requests.cpu',
    message: "spec.domain.resources.requests.cpu '-1': must be greater than or equal to 0.",
  },
  {
    name: 'CPU request above limit',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.resources = { requests: { cpu: '2' }, limits: { cpu: '1' } };
    },
    path: 'spec.domain.resources.requests.cpu',
    message: "spec.domain.resources.requests.cpu '2' is greater than spec.domain.resources.limits.cpu '1'",
  },
  {
    name: 'hugepages larger than memory',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.memory = { guest: '128Mi', hugepages: { pageSize: '1Gi' } };
      v.spec.domain.resources = { requests: { memory: '128Mi' } };
    },
    path: 'spec.domain.resources.requests.memory',
    message:
      "spec.domain.resources.requests.memory '128Mi' must be equal to or larger than page size spec.domain.hugepages.size '1Gi'",
  },
  {
    name: 'memory not a multiple of the page size',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.memory = { guest: '129Mi', hugepages: { pageSize: '2Mi' } };
      v.spec.domain.resources = { requests: { memory: '129Mi' } };
    },
    path: 'spec.domain.resources.requests.memory',
    message:
      "spec.domain.resources.requests.memory '129Mi' is not a multiple of the page size spec.domain.hugepages.size '2Mi'",
  },
  {
    name: 'dedicated CPUs with fractional request',
    file: 'vmi-dedicated-cpu.yaml',
    mutate: (v) => {
      v.spec.domain.resources = { requests: { cpu: '1500m' } };
    },
    path: 'spec.domain.resources.requests.cpu',
    message: 'provided resources CPU requests must be an interger',
  },
  {
    name: 'dedicated CPUs with request different from limit',
    file: 'vmi-dedicated-cpu.yaml',
    mutate: (v) => {
      v.spec.domain.cpu = { dedicatedCpuPlacement: true };
      v.spec.domain.resources = { requests: { cpu: '1' }, limits: { cpu: '2' } };
    },
    path: 'spec.domain.cpu.dedicatedCpuPlacement',
    message:
      'spec.domain.resources.requests.cpu or spec.domain.resources.limits.cpu must be equal when DedicatedCPUPlacement is true ',
  },
  {
    name: 'dedicated CPUs with more than two threads',
    file: 'vmi-dedicated-cpu.yaml',
    mutate: (v) => {
      v.spec.domain.cpu!.threads = 4;
    },
    path: 'spec.domain.cpu.dedicatedCpuPlacement',
    message:
      'Not more than two threads must be provided at spec.domain.cpu.threads (got 4) when DedicatedCPUPlacement is true',
  },
  {
    name: 'isolated emulator thread without dedicated CPUs',
    file: 'vmi-dedicated-cpu.yaml',
    mutate: (v) => {
      v.spec.domain.cpu!.dedicatedCpuPlacement = false;
    },
    path: 'spec.domain.cpu.isolateEmulatorThread',
    message: 'IsolateEmulatorThread should be only set in combination with DedicatedCPUPlacement',
  },
  {
    name: 'NUMA passthrough without dedicated CPUs',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.cpu = { numa: { guestMappingPassthrough: {} } };
      v.spec.domain.memory = { guest: '128Mi', hugepages: { pageSize: '2Mi' } };
    },
    path: 'spec.domain.cpu.numa.guestMappingPassthrough',
    message:
      'spec.domain.cpu.dedicatedCpuPlacement must be set to true when NUMA topology strategy is set in spec.domain.cpu.numa.guestMappingPassthrough',
  },
  {
    name: 'realtime without NUMA passthrough',
    file: 'vmi-dedicated-cpu.yaml',
    mutate: (v) => {
      v.spec.domain.cpu!.realtime = {};
    },
    path: 'spec.domain.cpu.numa.guestMappingPassthrough',
    message:
      'spec.domain.cpu.numa.guestMappingPassthrough must be defined when spec.domain.cpu.realtime is used',
  },
  {
    name: 'unsupported CPU feature policy',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.cpu = { features: [{ name: 'vmx', policy: 'maybe' }] };
    },
    path: 'spec.domain.cpu.features[0].policy',
    message: 'CPU feature vmx uses policy maybe that is not supported.',
  },
  {
    name: 'sockets above maxSockets',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.cpu = { sockets: 4, maxSockets: 2 };
    },
    path: 'spec.domain.cpu.sockets',
    message: 'Number of sockets in CPU topology is greater than the maximum sockets allowed',
  },
  {
    name: 'machine type outside the allow-list',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.machine = { type: 'pc-i440fx-7.2' };
    },
    path: 'spec.domain.machine.type',
    message: 'spec.domain.machine.type is not supported: pc-i440fx-7.2 (allowed values: [q35* pc-q35*])',
  },
  {
    name: 'machine type matching the pattern only as a substring',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.machine = { type: 'xq35' };
    },
    path: 'spec.domain.machine.type',
    message: 'spec.domain.machine.type is not supported: xq35 (allowed values: [q35* pc-q35*])',
  },
  {
    name: 'architecture other than the cluster default',
    file: 'vmi-arm64.yaml',
    mutate: (v) => {
      v.spec.architecture = 'arm64';
    },
    path: 'spec.architecture',
    message:
      'MultiArchitecture feature gate is not enabled in kubevirt-config, invalid entry spec.architecture',
  },
  {
    name: 'unknown architecture',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.architecture = 'riscv64';
    },
    path: 'spec.architecture',
    message: 'unsupported architecture: riscv64',
  },
  // Names
  {
    name: 'hostname that is not a DNS label',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.hostname = 'My_Host';
    },
    path: 'spec.hostname',
    message:
      "spec.hostname does not conform to the kubernetes DNS_LABEL rules : a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
  },
  {
    name: 'subdomain that is not a DNS subdomain',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.subdomain = 'bad..domain';
    },
    path: 'spec.subdomain',
    message:
      "spec.subdomain does not conform to the kubernetes DNS_SUBDOMAIN rules : a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
  },
  {
    name: 'object name with upper case',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.metadata!.name = 'VMI-Containerdisk';
    },
    path: 'metadata.name',
    message:
      "Invalid value: \"VMI-Containerdisk\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
  },
  {
    name: 'object without a name',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      delete v.metadata!.name;
    },
    path: 'metadata.name',
    message: 'Required value: name or generateName is required',
  },
  {
    name: 'name longer than 253 characters',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.metadata!.name = 'a'.repeat(254);
    },
    path: 'metadata.name',
    message: `Invalid value: "${'a'.repeat(254)}": must be no more than 253 characters`,
  },
  {
    name: 'reserved kubevirt.io label',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.metadata!.labels = { 'kubevirt.io/nodeName': 'node01' };
    },
    path: 'metadata.labels',
    message: 'creation of the following reserved kubevirt.io/ labels on a VMI object is prohibited',
  },
  {
    name: 'invalid label value',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.metadata!.labels = { special: 'has spaces' };
    },
    path: 'metadata.labels[special]',
    message:
      "Invalid value: \"has spaces\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
  },
  {
    name: 'sidecar annotation without the gate',
    file: 'vmi-sidecar-hook.yaml',
    mutate: () => {},
    path: 'metadata.annotations',
    message:
      'sidecar feature gate is not enabled in kubevirt-config, invalid entry metadata.annotations.hooks.kubevirt.io/hookSidecars',
  },
  {
    name: 'ignition annotation without the gate',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.metadata!.annotations = { 'kubevirt.io/ignitiondata': '{}' };
    },
    path: 'metadata.annotations',
    message:
      'ExperimentalIgnitionSupport feature gate is not enabled in kubevirt-config, invalid entry metadata.annotations.kubevirt.io/ignitiondata',
  },
  {
    name: 'migration thread count of one',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.metadata!.annotations = { 'kubevirt.io/multiThreadedQemuMigration': '1' };
    },
    path: 'metadata.annotations',
    message:
      'thread count (1) must be larger than 1. invalid entry metadata.annotations.kubevirt.io/multiThreadedQemuMigration',
  },
  // Networks and interfaces
  {
    name: 'interface without a network',
    file: 'vmi-masquerade-ports.yaml',
    mutate: (v) => {
      v.spec.networks![0].name = 'other';
    },
    path: 'spec.domain.devices.interfaces[0].name',
    message: "spec.domain.devices.interfaces[0].name 'testmasquerade' not found.",
  },
  {
    name: 'network without an interface',
    file: 'vmi-multus-secondary.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces!.pop();
    },
    path: 'spec.networks[1].name',
    message: "spec.networks[1].name 'ptp' not found.",
  },
  {
    name: 'duplicate network names',
    file: 'vmi-multus-secondary.yaml',
    mutate: (v) => {
      v.spec.networks![1].name = 'default';
      v.spec.domain.devices.interfaces![1].name = 'default';
    },
    path: 'spec.networks[1].name',
    message: 'Network with name "default" already exists, every network must have a unique name',
  },
  {
    name: 'two interfaces on one network',
    file: 'vmi-multus-bridge.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces!.push({ name: 'ptp', bridge: {} });
    },
    path: 'spec.domain.devices.interfaces[1].name',
    message: 'Only one interface can be connected to one specific network',
  },
  {
    name: 'masquerade on a multus network',
    file: 'vmi-multus-bridge.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0] = { name: 'ptp', masquerade: {} };
    },
    path: 'spec.domain.devices.interfaces[0].name',
    message: 'Masquerade interface only implemented with pod network',
  },
  {
    name: 'two binding methods on one interface',
    file: 'vmi-masquerade-ports.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0].bridge = {};
    },
    path: 'spec.domain.devices.interfaces[0]',
    message: 'logical testmasquerade interface can have only one binding method, got bridge, masquerade',
  },
  {
    name: 'binding plugin plus a binding method',
    file: 'vmi-masquerade-ports.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0].binding = { name: 'passt' };
    },
    path: 'spec.domain.devices.interfaces[0].binding',
    message: 'logical testmasquerade interface cannot have both binding plugin and interface binding method',
  },
  {
    name: 'discontinued slirp binding',
    file: 'vmi-masquerade-ports.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0] = { name: 'testmasquerade', slirp: {} };
    },
    path: 'spec.domain.devices.interfaces[0].slirp',
    message: 'Slirp interface support has been discontinued since v1.3',
  },
  {
    name: 'discontinued macvtap binding',
    file: 'vmi-multus-bridge.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0] = { name: 'ptp', macvtap: {} };
    },
    path: 'spec.domain.devices.interfaces[0].macvtap',
    message: 'Macvtap network binding has been discontinued since v1.3',
  },
  {
    name: 'bridge on the pod network when the cluster forbids it',
    file: 'vmi-masquerade-ports.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0] = { name: 'testmasquerade', bridge: {} };
    },
    path: 'spec.domain.devices.interfaces[0].name',
    message: 'Bridge on pod network configuration is not enabled under kubevirt-config',
  },
  {
    name: 'masquerade with the reserved MAC address',
    file: 'vmi-masquerade-ports.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0].macAddress = '02:00:00:00:00:00';
    },
    path: 'spec.domain.devices.interfaces[0].macAddress',
    message: 'The requested MAC address is reserved for the in-pod bridge. Please choose another one.',
  },
  {
    name: 'malformed MAC address',
    file: 'vmi-masquerade-ports.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0].macAddress = 'de:ad:be:ef';
    },
    path: 'spec.domain.devices.interfaces[0].macAddress',
    message: 'interface spec.domain.devices.interfaces[0].name has malformed MAC address (de:ad:be:ef).',
  },
  {
    name: 'unsupported interface model',
    file: 'vmi-masquerade-ports.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0].model = 'vmxnet3';
    },
    path: 'spec.domain.devices.interfaces[0].model',
    message: 'interface spec.domain.devices.interfaces[0].name uses model vmxnet3 that is not supported.',
  },
  {
    name: 'interface name with a dot',
    file: 'vmi-masquerade-ports.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0].name = 'test.masq';
      v.spec.networks![0].name = 'test.masq';
    },
    path: 'spec.domain.devices.interfaces[0].name',
    message:
      'Network interface name can only contain alphabetical characters, numbers, dashes (-) or underscores (_)',
  },
  {
    name: 'port protocol',
    file: 'vmi-masquerade-ports.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0].ports![0].protocol = 'SCTP';
    },
    path: 'spec.domain.devices.interfaces[0].ports[0].protocol',
    message: 'Unknown protocol, only TCP or UDP allowed',
  },
  {
    name: 'the same port forwarded twice (kubevirt-ts)',
    file: 'vmi-masquerade-ports.yaml',
    mutate: (v) => {
      const ports = v.spec.domain.devices.interfaces![0].ports!;
      ports.push({ ...ports[0], name: 'again' });
    },
    path: `spec.domain.devices.interfaces[0].ports[1].port`,
    message: 'Duplicate port 80/TCP on interface testmasquerade',
  },
  {
    name: 'duplicate port names',
    file: 'vmi-masquerade-ports.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0].ports!.push({ name: 'http', port: 8080 });
    },
    path: 'spec.domain.devices.interfaces[0].ports[1].name',
    message: 'Duplicate name of the port: http',
  },
  {
    name: 'port out of range',
    file: 'vmi-masquerade-ports.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0].ports![0].port = 70000;
    },
    // Upstream reports at ports[0]; kubevirt-ts names the field itself.
    path: 'spec.domain.devices.interfaces[0].ports[0].port',
    message: 'Port field must be in range 0 < x < 65536.',
  },
  {
    name: 'network with two types',
    file: 'vmi-masquerade-ports.yaml',
    mutate: (v) => {
      v.spec.networks![0].multus = { networkName: 'ptp-conf' };
    },
    path: 'spec.networks[0]',
    message: 'should have only one network type',
  },
  {
    name: 'multus network without a name',
    file: 'vmi-multus-bridge.yaml',
    mutate: (v) => {
      v.spec.networks![0].multus!.networkName = '';
    },
    path: 'spec.networks[0]',
    message: 'CNI delegating plugin must have a networkName',
  },
  {
    name: 'two pod interfaces',
    file: 'vmi-multus-secondary.yaml',
    mutate: (v) => {
      v.spec.networks![1] = { name: 'ptp', pod: {} };
    },
    path: 'spec.interfaces',
    message: 'more than one interface is connected to a pod network in spec.interfaces',
  },
  {
    name: 'passt binding on a multus network',
    file: 'vmi-multus-bridge.yaml',
    gates: ['PasstBinding'],
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0] = { name: 'ptp', passtBinding: {} };
    },
    path: 'spec.domain.devices.interfaces[0].name',
    message: 'Passt interface only implemented with pod network',
  },
  {
    name: 'passt binding without its feature gate',
    file: 'vmi-masquerade-ports.yaml',
    disabledGates: ['PasstBinding'],
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0] = { name: 'testmasquerade', passtBinding: {} };
    },
    path: 'spec.domain.devices.interfaces[0].name',
    message: 'PasstBinding feature gate is not enabled',
  },
  {
    name: 'binding plugin the cluster does not configure',
    file: 'vmi-masquerade-ports.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0] = { name: 'testmasquerade', binding: { name: 'mybinding' } };
    },
    path: 'spec.domain.devices.interfaces[0].binding.name',
    message:
      'logical testmasquerade interface requests a binding plugin mybinding that is not configured in kubevirt-config',
  },
  {
    name: 'two multus default networks',
    file: 'vmi-multus-bridge.yaml',
    mutate: (v) => {
      v.spec.networks![0].multus!.default = true;
      v.spec.networks!.push({ name: 'other', multus: { networkName: 'other-conf', default: true } });
      v.spec.domain.devices.interfaces!.push({ name: 'other', bridge: {} });
    },
    path: 'spec.networks',
    message: 'Multus CNI should only have one default network',
  },
  {
    name: 'pod network next to a multus default network',
    file: 'vmi-multus-secondary.yaml',
    mutate: (v) => {
      v.spec.networks![1].multus!.default = true;
    },
    path: 'spec.networks',
    message: 'Pod network cannot be defined when Multus default network is defined',
  },
  {
    name: 'EUI-64 MAC address',
    file: 'vmi-multus-bridge.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0].macAddress = '02:00:5e:10:00:00:00:01';
    },
    path: 'spec.domain.devices.interfaces[0].macAddress',
    message:
      'interface spec.domain.devices.interfaces[0].name has MAC address (02:00:5e:10:00:00:00:01) that is too long.',
  },
  {
    name: 'malformed PCI address of an interface',
    file: 'vmi-multus-bridge.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0].pciAddress = '0000:81:11';
    },
    path: 'spec.domain.devices.interfaces[0].pciAddress',
    message: 'interface spec.domain.devices.interfaces[0].name has malformed PCI address (0000:81:11).',
  },
  {
    name: 'port zero',
    file: 'vmi-masquerade-ports.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0].ports![0].port = 0;
    },
    path: 'spec.domain.devices.interfaces[0].ports[0]',
    message: 'Port field is mandatory.',
  },
  {
    name: 'unknown interface state',
    file: 'vmi-multus-bridge.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0].state = 'sleeping';
    },
    path: 'spec.domain.devices.interfaces[0].state',
    message: 'logical ptp interface state value is unsupported: sleeping',
  },
  {
    name: 'absent state on a masquerade interface',
    file: 'vmi-masquerade-ports.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0].state = 'absent';
    },
    path: 'spec.domain.devices.interfaces[0].state',
    message: `"testmasquerade" interface's state "absent" is supported only for bridge binding`,
  },
  {
    name: 'absent state on the default network',
    file: 'vmi-multus-secondary.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![0] = { name: 'default', bridge: {}, state: 'absent' };
    },
    path: 'spec.domain.devices.interfaces[0].state',
    message: `"default" interface's state "absent" is not supported on default networks`,
  },
  {
    name: 'link state on an SR-IOV interface',
    file: 'vmi-sriov.yaml',
    mutate: (v) => {
      v.spec.domain.devices.interfaces![1].state = 'down';
    },
    path: 'spec.domain.devices.interfaces[1].state',
    message: `"sriov-net" interface's state "down" is not supported for SR-IOV NICs`,
  },
  // Probes and start strategy
  {
    name: 'probe with two handlers',
    file: 'vmi-pod-masquerade.yaml',
    mutate: (v) => {
      v.spec.readinessProbe = { guestAgentPing: {}, tcpSocket: { port: 22 } };
    },
    path: 'spec.readinessProbe',
    message: 'spec.readinessProbe must have exactly one probe type set',
  },
  {
    name: 'probe with no handler',
    file: 'vmi-pod-masquerade.yaml',
    mutate: (v) => {
      v.spec.livenessProbe = { initialDelaySeconds: 10 };
    },
    path: 'spec.livenessProbe',
    message:
      'either spec.livenessProbe.tcpSocket, spec.livenessProbe.exec or spec.livenessProbe.httpGet must be set if a spec.livenessProbe is specified',
  },
  {
    name: 'HTTP probe without a pod network',
    file: 'vmi-multus-bridge.yaml',
    mutate: (v) => {
      v.spec.readinessProbe = { httpGet: { port: 80 } };
    },
    path: 'spec.readinessProbe.httpGet',
    message: 'spec.readinessProbe.httpGet is only allowed if the Pod Network is attached',
  },
  {
    name: 'liveness probe with a success threshold above 1 (the pod would be refused)',
    file: 'vmi-pod-masquerade.yaml',
    mutate: (v) => {
      v.spec.livenessProbe = { tcpSocket: { port: 22 }, successThreshold: 2 };
    },
    path: 'spec.livenessProbe.successThreshold',
    message: 'spec.livenessProbe.successThreshold must be 1',
  },
  {
    name: 'unknown start strategy',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.startStrategy = 'Later';
    },
    path: 'spec.startStrategy',
    message: 'spec.startStrategy is set with an unrecognized option: Later',
  },
  {
    name: 'paused start with a liveness probe',
    file: 'vmi-pod-masquerade.yaml',
    mutate: (v) => {
      v.spec.startStrategy = 'Paused';
      v.spec.livenessProbe = { guestAgentPing: {} };
    },
    path: 'spec.startStrategy',
    message:
      'either spec.startStrategy or spec.livenessProbe should be provided.Pausing VMI with LivenessProbe is not supported',
  },
  {
    name: 'unknown eviction strategy',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.evictionStrategy = 'Pray';
    },
    path: 'spec.evictionStrategy',
    message: 'spec.evictionStrategy is set with an unrecognized option: Pray',
  },
  // Firmware, features, security
  {
    name: 'SecureBoot without SMM',
    file: 'vmi-secureboot.yaml',
    mutate: (v) => {
      delete v.spec.domain.features!.smm;
    },
    path: 'spec.domain',
    message: 'spec.domain has EFI SecureBoot enabled. SecureBoot requires SMM, which is currently disabled.',
  },
  {
    name: 'SecureBoot with SMM disabled',
    file: 'vmi-secureboot.yaml',
    mutate: (v) => {
      v.spec.domain.features!.smm = { enabled: false };
    },
    path: 'spec.domain',
    message: 'spec.domain has EFI SecureBoot enabled. SecureBoot requires SMM, which is currently disabled.',
  },
  {
    name: 'EFI and BIOS together',
    file: 'vmi-efi.yaml',
    mutate: (v) => {
      v.spec.domain.firmware!.bootloader!.bios = {};
    },
    path: 'spec.domain.firmware.bootloader',
    message:
      'spec.domain.firmware.bootloader has both EFI and BIOS configured, but they are mutually exclusive.',
  },
  {
    name: 'firmware serial with forbidden characters',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.firmware = { serial: 'serial#1' };
    },
    path: 'spec.domain.firmware.serial',
    message:
      'spec.domain.firmware.serial must be made up of the following characters [A-Za-z0-9_.+-], if specified',
  },
  {
    name: 'kernel boot without an image',
    file: 'vmi-kernel-boot.yaml',
    mutate: (v) => {
      v.spec.domain.firmware!.kernelBoot!.container!.image = '';
    },
    path: 'spec.domain.firmware.kernelBoot.container.image',
    message: 'spec.domain.firmware.kernelBoot.container must be defined with an image',
  },
  {
    name: 'kernel boot with a relative kernel path',
    file: 'vmi-kernel-boot.yaml',
    mutate: (v) => {
      v.spec.domain.firmware!.kernelBoot!.container!.kernelPath = 'boot/vmlinuz-virt';
    },
    path: 'spec.domain.firmware.kernelBoot.container.kernelPath',
    message:
      'spec.domain.firmware.kernelBoot.container.kernelPath must be an absolute path to a file without relative components',
  },
  {
    name: 'kernel args without a kernel',
    file: 'vmi-kernel-boot.yaml',
    mutate: (v) => {
      delete v.spec.domain.firmware!.kernelBoot!.container;
      v.spec.volumes = [
        {
          name: 'containerdisk',
          containerDisk: { image: 'quay.io/kubevirt/cirros-container-disk-demo:v1.5.0' },
        },
      ];
    },
    path: 'spec.domain.firmware.kernelBoot.kernelArgs',
    message: 'kernel arguments cannot be provided without an external kernel',
  },
  {
    name: 'Hyper-V feature whose requirement is disabled',
    file: 'vmi-windows.yaml',
    mutate: (v) => {
      v.spec.domain.features!.hyperv!.synic = { enabled: true };
      v.spec.domain.features!.hyperv!.vpindex = { enabled: false };
    },
    path: 'spec.domain.features.hyperv.synic',
    message:
      "'spec.domain.features.hyperv.synic' requires 'spec.domain.features.hyperv.vpindex', which was disabled.",
  },
  {
    name: 'launchSecurity without the gate',
    file: 'vmi-efi.yaml',
    mutate: (v) => {
      v.spec.domain.launchSecurity = { sev: {} };
    },
    path: 'spec.launchSecurity',
    message: 'WorkloadEncryptionSEV feature gate is not enabled in kubevirt-config',
  },
  {
    name: 'two launchSecurity types',
    file: 'vmi-efi.yaml',
    gates: ['WorkloadEncryptionSEV'],
    mutate: (v) => {
      v.spec.domain.launchSecurity = { sev: {}, snp: {} };
    },
    path: 'spec.launchSecurity',
    message: 'One and only one launchSecurity type can be set',
  },
  {
    name: 'SEV without EFI',
    file: 'vmi-containerdisk.yaml',
    gates: ['WorkloadEncryptionSEV'],
    mutate: (v) => {
      v.spec.domain.launchSecurity = { sev: {} };
    },
    path: 'spec.launchSecurity',
    message: 'SEV requires OVMF (UEFI)',
  },
  {
    name: 'SNP with SecureBoot',
    file: 'vmi-secureboot.yaml',
    gates: ['WorkloadEncryptionSEV'],
    mutate: (v) => {
      v.spec.domain.launchSecurity = { snp: {} };
    },
    path: 'spec.launchSecurity',
    message: 'SNP does not work along with SecureBoot',
  },
  {
    name: 'SNP with persistent EFI variables',
    file: 'vmi-efi.yaml',
    gates: ['WorkloadEncryptionSEV'],
    mutate: (v) => {
      v.spec.domain.launchSecurity = { snp: {} };
      v.spec.domain.firmware!.bootloader!.efi!.persistent = true;
    },
    path: 'spec.launchSecurity',
    message: 'SNP does not work along with Persistent EFI variables',
  },
  {
    name: 'SEV attestation without a paused start',
    file: 'vmi-efi.yaml',
    gates: ['WorkloadEncryptionSEV'],
    mutate: (v) => {
      v.spec.domain.launchSecurity = { sev: { attestation: {} } };
    },
    path: 'spec.launchSecurity',
    message: "SEV attestation requires VMI StartStrategy 'Paused'",
  },
  {
    name: 'SEV with a bootable NIC',
    file: 'vmi-efi.yaml',
    gates: ['WorkloadEncryptionSEV'],
    mutate: (v) => {
      v.spec.domain.launchSecurity = { sev: {} };
      v.spec.domain.devices.interfaces = [{ name: 'default', masquerade: {}, bootOrder: 2 }];
      v.spec.networks = [{ name: 'default', pod: {} }];
    },
    path: 'spec.launchSecurity',
    message: 'SEV does not work with bootable NICs: default',
  },
  // Devices behind feature gates
  {
    name: 'host devices without the gate',
    file: 'vmi-hostdevice.yaml',
    mutate: () => {},
    path: 'spec.HostDevices',
    message: 'Host Devices feature gate is not enabled in kubevirt-config',
  },
  {
    name: 'DRA GPU without the gate',
    file: 'vmi-gpu-dra.yaml',
    mutate: () => {},
    path: 'spec.domain.devices.gpus[0]',
    message: 'GPUsWithDRA feature gate is not enabled in kubevirt-config',
  },
  {
    name: 'DRA GPU naming an unknown claim',
    file: 'vmi-gpu-dra.yaml',
    gates: ['GPUsWithDRA'],
    mutate: (v) => {
      v.spec.domain.devices.gpus![0].claimName = 'missing-claim';
    },
    path: 'spec.domain.devices.gpus[0].claimName',
    message: "spec.domain.devices.gpus[0].claimName 'missing-claim' not found in spec.resourceClaims.",
  },
  {
    name: 'VSOCK without the gate',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.autoattachVSOCK = true;
    },
    path: 'spec.domain.devices.autoattachVSOCK',
    message: 'VSOCK feature gate is not enabled in kubevirt-config',
  },
  {
    name: 'downward metrics device without the gate',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.downwardMetrics = {};
    },
    path: 'spec.domain.devices.downwardMetrics',
    message: 'downwardMetrics virtio serial is not allowed: DownwardMetrics feature gate is not enabled',
  },
  {
    name: 'input device with a PS/2 bus',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.inputs = [{ name: 'tablet', type: 'tablet', bus: 'ps2' }];
    },
    path: 'spec.domain.devices.inputs[0].bus',
    message: 'Input device can have only virtio or usb bus.',
  },
  {
    name: 'input device that is a keyboard',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.inputs = [{ name: 'kbd', type: 'keyboard', bus: 'usb' }];
    },
    path: 'spec.domain.devices.inputs[0].type',
    message: 'Input device can have only tablet type.',
  },
  {
    name: 'sound device model',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.devices.sound = { name: 'audio', model: 'sb16' };
    },
    path: 'spec.Sound',
    message: "Sound device type is not supported. Options: 'ich9' or 'ac97'",
  },
  {
    name: 'invalid IO threads policy',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.domain.ioThreadsPolicy = 'dedicated';
    },
    path: 'spec.domain.ioThreadsPolicy',
    message: 'Invalid IOThreadsPolicy (dedicated)',
  },
  {
    name: 'DNS policy None without a config',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.dnsPolicy = 'None';
    },
    path: 'spec.dnsConfig',
    message: 'must provide `dnsConfig` when `dnsPolicy` is None',
  },
  {
    name: 'DNS nameserver that is not an IP',
    file: 'vmi-containerdisk.yaml',
    mutate: (v) => {
      v.spec.dnsConfig = { nameservers: ['dns.example.com'] };
    },
    path: 'spec.dnsConfig.nameservers',
    message: 'must be valid IP address: dns.example.com',
  },
  {
    name: 'access credential without a type',
    file: 'vmi-cloudinit-nocloud.yaml',
    mutate: (v) => {
      v.spec.accessCredentials = [{}];
    },
    path: 'spec.accessCredentials[0]',
    message: 'spec.accessCredentials[0] must have exactly one access credential type set',
  },
  {
    name: 'SSH key through configDrive without such a volume',
    file: 'vmi-cloudinit-nocloud.yaml',
    mutate: (v) => {
      v.spec.accessCredentials = [
        {
          sshPublicKey: {
            source: { secret: { secretName: 'keys' } },
            propagationMethod: { configDrive: {} },
          },
        },
      ];
    },
    path: 'spec.accessCredentials[0].sshPublicKey.propagationMethod',
    message:
      'spec.accessCredentials[0] requires a configDrive volume to exist when the configDrive propagationMethod is in use.',
  },
  {
    name: 'Hyper-V features together with Hyper-V passthrough',
    file: 'vmi-windows.yaml',
    mutate: (v) => {
      v.spec.domain.features!.hypervPassthrough = { enabled: true };
    },
    path: 'spec.domain.features.hyperv',
    message:
      'Cannot explicitly set hyperV features if HypervPassthrough is being used. Please use either HyperV or HypervPassthrough.',
  },
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
  it.each(cases)('$name ($file)', (c) => {
    const vmi = fixture<VirtualMachineInstance>(c.file);
    c.mutate(vmi);
    const config = createClusterConfig(
      {
        developerConfiguration: { disabledFeatureGates: c.disabledGates ?? [] },
        ...(c.rollout ? { vmRolloutStrategy: c.rollout } : {}),
        ...(c.name.includes('cluster forbids')
          ? { network: { permitBridgeInterfaceOnPodNetwork: false } }
          : {}),
      },
      { hostArchitecture: c.arch ?? 'amd64', featureGates: c.gates ?? [] },
    );
    const { errors } = admit(vmi as never, config);
    expect(errors.map((e) => [e.path, e.message])).toContainEqual([c.path, c.message]);
  });

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
