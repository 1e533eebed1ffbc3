/**
 * VM, ReplicaSet, Pool, Migration, instance type and preference admission rules: each case
 * mutates a fixture manifest (test/fixtures/manifests) and expects the exact field path and message.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { admit } from '../../../src/api/validation/admission';
import { fixture } from '../../support/fixtures';

// biome-ignore lint/suspicious/noExplicitAny: the cases edit arbitrary fixture fields
type Obj = any;

interface Case {
  name: string;
  file: string;
  mutate: (o: Obj) => void;
  path: string;
  message: string;
  gates?: string[];
}

const cases: Case[] = [
  // VirtualMachine
  {
    name: 'running and runStrategy together',
    file: 'vm-containerdisk.yaml',
    mutate: (vm) => {
      vm.spec.running = false;
    },
    path: 'spec.running',
    message:
      'Running and RunStrategy are mutually exclusive. Note that Running is deprecated, please use RunStrategy instead',
  },
  {
    name: 'instance type matcher naming both a volume to infer from and a name (upstream)',
    file: 'vm-containerdisk.yaml',
    mutate: (vm) => {
      vm.spec.instancetype = { name: 'u1.small', inferFromVolume: 'containerdisk' };
    },
    path: 'spec.instancetype.name',
    message: 'Name already set, should be cleared before setting inferFromVolume',
  },
  {
    name: 'neither running nor runStrategy',
    file: 'vm-containerdisk.yaml',
    mutate: (vm) => {
      delete vm.spec.runStrategy;
    },
    path: 'spec.running',
    message: 'RunStrategy must be specified',
  },
  {
    name: 'unknown run strategy',
    file: 'vm-containerdisk.yaml',
    mutate: (vm) => {
      vm.spec.runStrategy = 'Sometimes';
    },
    path: 'spec.runStrategy',
    message: 'Invalid RunStrategy (Sometimes)',
  },
  {
    name: 'WaitAsReceiver without decentralized migration',
    file: 'vm-containerdisk.yaml',
    mutate: (vm) => {
      vm.spec.runStrategy = 'WaitAsReceiver';
    },
    path: 'spec.runStrategy',
    message: 'DecentralizedLiveMigration feature gate is not enabled in kubevirt-config',
  },
  {
    name: 'missing template',
    file: 'vm-containerdisk.yaml',
    mutate: (vm) => {
      delete vm.spec.template;
    },
    path: 'spec.template',
    message: 'Required value',
  },
  {
    name: 'invalid template disk bus, reported at the template path',
    file: 'vm-containerdisk.yaml',
    mutate: (vm) => {
      vm.spec.template.spec.domain.devices.disks[0].disk.bus = 'ide';
    },
    path: 'spec.template.spec.domain.devices.disks[0].disk.bus',
    message: 'IDE bus is not supported',
  },
  {
    name: 'template machine type outside the allow-list',
    file: 'vm-containerdisk.yaml',
    mutate: (vm) => {
      vm.spec.template.spec.domain.machine = { type: 'pc' };
    },
    path: 'spec.template.spec.domain.machine.type',
    message: 'spec.template.spec.domain.machine.type is not supported: pc (allowed values: [q35* pc-q35*])',
  },
  {
    name: 'template sidecar annotation without the gate',
    file: 'vm-sidecar-hook-configmap.yaml',
    mutate: () => {},
    path: 'spec.template.metadata.annotations',
    message:
      'sidecar feature gate is not enabled in kubevirt-config, invalid entry spec.template.metadata.annotations.hooks.kubevirt.io/hookSidecars',
  },
  {
    name: 'data volume template not used by any volume',
    file: 'vm-datavolume.yaml',
    mutate: (vm) => {
      vm.spec.template.spec.volumes[0].dataVolume.name = 'other-dv';
    },
    path: 'spec.dataVolumeTemplate[0]',
    message:
      "DataVolumeTemplate entry spec.dataVolumeTemplate[0] must be referenced in the VMI template's 'volumes' list",
  },
  {
    name: 'data volume template without a name',
    file: 'vm-datavolume.yaml',
    mutate: (vm) => {
      delete vm.spec.dataVolumeTemplates[0].metadata.name;
    },
    path: 'spec.dataVolumeTemplate[0].name',
    message: "'name' field must not be empty for DataVolumeTemplate entry spec.dataVolumeTemplate[0].name.",
  },
  {
    name: 'data volume template without storage',
    file: 'vm-datavolume.yaml',
    mutate: (vm) => {
      delete vm.spec.dataVolumeTemplates[0].spec.pvc;
    },
    path: 'spec.dataVolumeTemplate[0].PVC.Storage',
    message: 'Missing Data volume PVC or Storage',
  },
  {
    name: 'data volume template with two sources',
    file: 'vm-datavolume.yaml',
    mutate: (vm) => {
      vm.spec.dataVolumeTemplates[0].spec.source.http = { url: 'http://example.com/disk.img' };
    },
    path: 'spec.dataVolumeTemplate[0].source',
    message: 'Multiple dataVolume sources',
  },
  {
    name: 'data volume template without a source',
    file: 'vm-datavolume.yaml',
    mutate: (vm) => {
      delete vm.spec.dataVolumeTemplates[0].spec.source;
    },
    path: 'spec.dataVolumeTemplate[0].source.sourceRef',
    message: 'Data volume should have either Source, SourceRef, or be externally populated',
  },
  {
    name: 'VM name with upper case',
    file: 'vm-containerdisk.yaml',
    mutate: (vm) => {
      vm.metadata.name = 'VM-Cirros';
    },
    path: 'metadata.name',
    message:
      "Invalid value: \"VM-Cirros\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
  },
  {
    name: 'namespace that is not a DNS label',
    file: 'vm-containerdisk.yaml',
    mutate: (vm) => {
      vm.metadata.namespace = 'my.namespace';
    },
    path: 'metadata.namespace',
    message:
      "Invalid value: \"my.namespace\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
  },
  // VirtualMachineInstanceReplicaSet
  {
    name: 'replica set selector not matching the template',
    file: 'vmirs-containerdisk.yaml',
    mutate: (rs) => {
      rs.spec.selector.matchLabels['kubevirt.io/vmReplicaSet'] = 'other';
    },
    path: 'spec.selector',
    message: 'selector does not match labels.',
  },
  {
    name: 'replica set selector with an unknown operator',
    file: 'vmirs-containerdisk.yaml',
    mutate: (rs) => {
      rs.spec.selector.matchExpressions = [{ key: 'app', operator: 'Like', values: ['x'] }];
    },
    path: 'spec.selector.matchExpressions[0].operator',
    message: '"Like" is not a valid label selector operator',
  },
  {
    name: 'replica set without a template',
    file: 'vmirs-containerdisk.yaml',
    mutate: (rs) => {
      delete rs.spec.template;
    },
    path: 'spec.template',
    message: 'Required value',
  },
  {
    name: 'replica set template with a bad volume',
    file: 'vmirs-containerdisk.yaml',
    mutate: (rs) => {
      rs.spec.template.spec.volumes[0].emptyDisk = { capacity: '1Gi' };
    },
    path: 'spec.template.spec.volumes[0]',
    message: 'spec.template.spec.volumes[0] must have exactly one source type set',
  },
  {
    name: 'replica set with negative replicas',
    file: 'vmirs-containerdisk.yaml',
    mutate: (rs) => {
      rs.spec.replicas = -1;
    },
    path: 'spec.replicas',
    message: 'Invalid value: -1: must be greater than or equal to 0',
  },
  // VirtualMachinePool
  {
    name: 'pool selector not matching the VM template',
    file: 'vmpool-containerdisk.yaml',
    mutate: (p) => {
      p.spec.virtualMachineTemplate.metadata.labels = { app: 'other' };
    },
    path: 'spec.selector',
    message: 'selector does not match labels.',
  },
  {
    name: 'pool without a VM template',
    file: 'vmpool-containerdisk.yaml',
    mutate: (p) => {
      delete p.spec.virtualMachineTemplate;
    },
    path: 'spec.virtualMachineTemplate',
    message: 'Required value',
  },
  {
    name: 'pool VM template with an invalid run strategy',
    file: 'vmpool-containerdisk.yaml',
    mutate: (p) => {
      p.spec.virtualMachineTemplate.spec.runStrategy = 'Forever';
    },
    path: 'spec.virtualMachineTemplate.spec.runStrategy',
    message: 'Invalid RunStrategy (Forever)',
  },
  {
    name: 'pool VMI template with an IDE disk',
    file: 'vmpool-containerdisk.yaml',
    mutate: (p) => {
      p.spec.virtualMachineTemplate.spec.template.spec.domain.devices.disks[0].disk.bus = 'ide';
    },
    path: 'spec.virtualMachineTemplate.spec.template.spec.domain.devices.disks[0].disk.bus',
    message: 'IDE bus is not supported',
  },
  // VirtualMachineInstanceMigration
  {
    name: 'migration without a VMI name',
    file: 'migration.yaml',
    mutate: (m) => {
      delete m.spec.vmiName;
    },
    path: 'spec.vmiName',
    message: 'vmiName is missing',
  },
  {
    name: 'migration with a sendTo target but no decentralized migration',
    file: 'migration.yaml',
    mutate: (m) => {
      m.spec.sendTo = { connectURL: 'https://remote:8443', migrationID: 'abc' };
    },
    path: 'spec.sendTo',
    message: 'DecentralizedLiveMigration feature gate is not enabled in kubevirt-config',
  },
  // Instance types and preferences
  {
    name: 'instance type with zero vCPUs',
    file: 'instancetype-large.yaml',
    mutate: (it) => {
      it.spec.cpu.guest = 0;
    },
    path: 'spec.cpu.guest',
    message: 'Invalid value: 0: must be a whole number of at least 1',
  },
  {
    name: 'instance type with bad memory',
    file: 'instancetype-small.yaml',
    mutate: (it) => {
      it.spec.memory.guest = 'lots';
    },
    path: 'spec.memory.guest',
    // Every quantity field is checked by the schema before the kind's rules run.
    message:
      "spec.memory.guest 'lots': quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
  },
  {
    name: 'instance type overcommit with hugepages',
    file: 'instancetype-large.yaml',
    mutate: (it) => {
      it.spec.memory.overcommitPercent = 20;
      it.spec.memory.hugepages = { pageSize: '2Mi' };
    },
    path: 'spec.memory.overcommitPercent',
    message: 'spec.memory.overcommitPercent and spec.memory.hugepages should not be requested together.',
  },
  {
    name: 'instance type overcommit above 100 percent',
    file: 'instancetype-large.yaml',
    mutate: (it) => {
      it.spec.memory.overcommitPercent = 150;
    },
    path: 'spec.memory.overcommitPercent',
    message: "spec.memory.overcommitPercent '150': must be in range between 0 and 100.",
  },
  {
    name: 'preference spreading over cores and threads with a ratio other than 2',
    file: 'preference-virtio.yaml',
    mutate: (p) => {
      p.spec.cpu = { preferredCPUTopology: 'spread', spreadOptions: { across: 'CoresThreads', ratio: 4 } };
    },
    path: 'spec.cpu.spreadOptions.ratio',
    message: 'only a ratio of 2 (1 core 2 threads) is allowed when spreading vCPUs over cores and threads',
  },
  {
    name: 'cluster instance type with a namespace',
    file: 'cluster-instancetype-small.yaml',
    mutate: (it) => {
      it.metadata.namespace = 'default';
    },
    path: 'metadata.namespace',
    message: 'Forbidden: not allowed on this type',
  },
  {
    name: 'preference with an unknown CPU topology',
    file: 'preference-windows.yaml',
    mutate: (p) => {
      p.spec.cpu.preferredCPUTopology = 'numa';
    },
    path: 'spec.cpu.preferredCPUTopology',
    message: 'Unsupported value: "numa": supported values: "sockets", "cores", "threads", "spread", "any"',
  },
  {
    name: 'preference with an unknown spread axis',
    file: 'preference-virtio.yaml',
    mutate: (p) => {
      p.spec.cpu = { preferredCPUTopology: 'spread', spreadOptions: { across: 'Dies' } };
    },
    path: 'spec.cpu.spreadOptions.across',
    message:
      'Unsupported value: "Dies": supported values: "SocketsCores", "CoresThreads", "SocketsCoresThreads"',
  },
];

describe('VM, ReplicaSet, Pool, Migration, instance type and preference rules', () => {
  it.each(cases)('$name ($file)', (c) => {
    const obj = fixture<Obj>(c.file);
    c.mutate(obj);
    const config = createClusterConfig({}, { hostArchitecture: 'amd64', featureGates: c.gates ?? [] });
    const { errors } = admit(obj, config);
    expect(errors.map((e) => [e.path, e.message])).toContainEqual([c.path, c.message]);
  });
});

describe('LiveUpdate rollout rules', () => {
  const cfg = createClusterConfig({ vmRolloutStrategy: 'LiveUpdate' }, { hostArchitecture: 'amd64' });

  it.each([
    ['127Mi', '4Gi', 'Guest memory must be 2Mi aligned'],
    ['1Gi', '512Mi', 'Guest memory is greater than the configured maxGuest memory'],
    ['128Mi', '1Gi', 'Memory hotplug is only available for VMs with at least 1Gi of guest memory'],
  ])('guest %s with maxGuest %s: %s', (guest, maxGuest, message) => {
    const vm = fixture<Obj>('vm-containerdisk.yaml');
    vm.spec.template.spec.domain.memory = { guest, maxGuest };
    expect(admit(vm, cfg).errors.map((e) => [e.path, e.message])).toContainEqual([
      'spec.template.spec.domain.memory.guest',
      message,
    ]);
  });
});
