/** VMI admission rules: memory, CPU and names (the cases' shape and check: vmi-rule-case.ts). */
import { describe, it } from 'vitest';
import { expectVmiRuleError, type VmiRuleCase } from './vmi-rule-case';

const cases: VmiRuleCase[] = [
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
];

describe('VMI validation rules on mutated fixture manifests: memory, CPU and names', () => {
  it.each(cases)('$name ($file)', expectVmiRuleError);
});
