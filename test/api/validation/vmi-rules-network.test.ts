/** VMI admission rules: networks and interfaces (the cases' shape and check: vmi-rule-case.ts). */
import { describe, it } from 'vitest';
import { expectVmiRuleError, type VmiRuleCase } from './vmi-rule-case';

const cases: VmiRuleCase[] = [
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
];

describe('VMI validation rules on mutated fixture manifests: networks and interfaces', () => {
  it.each(cases)('$name ($file)', expectVmiRuleError);
});
