/**
 * Network and interface rules of a VMI spec (upstream pkg/network/admitter and the VMI
 * create admitter): networks and interfaces pair one to one, each network has one type,
 * each interface one binding that suits its network, discontinued bindings are rejected.
 */
import type { ClusterConfig } from '../config/cluster-config';
import { FeatureGate } from '../config/feature-gates';
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { Interface, Network, VirtualMachineInstanceSpec } from '../generated/types';
import { isDNS1123Label, isDNS1123Subdomain } from './names';
import { isValidPortName } from './port-name';
import { validateInterfaceStates } from './vmi-interface-state';

const arrayLenMax = 256;
const validInterfaceModels = new Set(['e1000', 'e1000e', 'igb', 'ne2k_pci', 'pcnet', 'rtl8139', 'virtio']);
/** MAC the in-pod bridge uses for masquerade; guests may not take it. */
const reservedMasqueradeMAC = '02:00:00:00:00:00';
const macRe = /^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$/;
const longMacRe = /^([0-9A-Fa-f]{2}[:-]){7}[0-9A-Fa-f]{2}$|^([0-9A-Fa-f]{2}[:-]){19}[0-9A-Fa-f]{2}$/;
const pciAddressRe = /^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$/;
const ifaceNameRe = /^[A-Za-z0-9-_]+$/;

/** Number of interfaces attached to a pod network (upstream's `getNumberOfPodInterfaces`). */
export function countPodInterfaces(spec: VirtualMachineInstanceSpec): number {
  const ifaceNames = new Set((spec.domain?.devices?.interfaces ?? []).map((i) => i.name));
  return (spec.networks ?? []).filter((n) => n.pod && ifaceNames.has(n.name)).length;
}

function bindings(iface: Interface): string[] {
  const all: [string, unknown][] = [
    ['bridge', iface.bridge],
    ['masquerade', iface.masquerade],
    ['sriov', iface.sriov],
    ['passtBinding', iface.passtBinding],
    ['binding', iface.binding],
  ];
  return all.filter(([, v]) => v !== undefined && v !== null).map(([k]) => k);
}

function validateNetworks(field: FieldPath, networks: Network[]): FieldError[] {
  const errs: FieldError[] = [];
  let podExists = false;
  let multusDefault = 0;
  networks.forEach((net, idx) => {
    let types = 0;
    if (net.pod) {
      types++;
      podExists = true;
    }
    if (net.multus) {
      types++;
      if (net.multus.default) multusDefault++;
    }
    if (net.resourceClaim) types++;
    const path = field.child('networks').index(idx);
    if (types === 0) errs.push(fieldError(path, 'should have a network type', 'FieldValueRequired'));
    else if (types > 1)
      errs.push(fieldError(path, 'should have only one network type', 'FieldValueRequired'));
    if (net.multus && !net.multus.networkName) {
      errs.push(fieldError(path, 'CNI delegating plugin must have a networkName', 'FieldValueRequired'));
    } else if (net.multus?.networkName) {
      const bad = multusNetworkNameProblems(net.multus.networkName);
      if (bad.length) {
        errs.push(
          fieldError(
            path.child('multus', 'networkName'),
            `${JSON.stringify(net.multus.networkName.slice(0, 300))} is not a [namespace/]name: ${bad.join(', ')}`,
          ),
        );
      }
    }
  });
  if (multusDefault > 1) {
    errs.push(fieldError(field.child('networks'), 'Multus CNI should only have one default network'));
  }
  if (podExists && multusDefault > 0) {
    errs.push(
      fieldError(
        field.child('networks'),
        'Pod network cannot be defined when Multus default network is defined',
      ),
    );
  }
  return errs;
}

function validateInterface(
  field: FieldPath,
  idx: number,
  iface: Interface,
  net: Network | undefined,
  config: ClusterConfig,
): FieldError[] {
  const errs: FieldError[] = [];
  const ifPath = field.child('domain', 'devices', 'interfaces').index(idx);
  const namePath = ifPath.child('name');
  if (!net) {
    errs.push(fieldError(namePath, `${namePath} '${iface.name}' not found.`));
  }
  if (typeof iface.name !== 'string' || !ifaceNameRe.test(iface.name)) {
    errs.push(
      fieldError(
        namePath,
        'Network interface name can only contain alphabetical characters, numbers, dashes (-) or underscores (_)',
      ),
    );
  }
  // Bindings discontinued in v1.3.
  if (iface.slirp)
    errs.push(fieldError(ifPath.child('slirp'), 'Slirp interface support has been discontinued since v1.3'));
  if (iface.passt)
    errs.push(fieldError(ifPath.child('passt'), 'Passt network binding has been discontinued since v1.3'));
  if (iface.macvtap) {
    errs.push(
      fieldError(ifPath.child('macvtap'), 'Macvtap network binding has been discontinued since v1.3'),
    );
  }
  const b = bindings(iface);
  if (iface.binding && b.length > 1) {
    errs.push(
      fieldError(
        ifPath.child('binding'),
        `logical ${iface.name} interface cannot have both binding plugin and interface binding method`,
      ),
    );
  } else if (b.length > 1) {
    errs.push(
      fieldError(
        ifPath,
        `logical ${iface.name} interface can have only one binding method, got ${b.join(', ')}`,
      ),
    );
  }
  if (net) {
    if (iface.masquerade && !net.pod) {
      errs.push(fieldError(namePath, 'Masquerade interface only implemented with pod network'));
    }
    if (iface.bridge && net.pod && !config.permitBridgeInterfaceOnPodNetwork) {
      errs.push(
        fieldError(namePath, 'Bridge on pod network configuration is not enabled under kubevirt-config'),
      );
    }
    if (iface.passtBinding && !net.pod) {
      errs.push(fieldError(namePath, 'Passt interface only implemented with pod network'));
    }
    if (iface.passtBinding && !config.isFeatureGateEnabled(FeatureGate.PasstBinding)) {
      errs.push(fieldError(namePath, `${FeatureGate.PasstBinding} feature gate is not enabled`));
    }
    // An own key: `constructor` or `__proto__` are found on every object's prototype.
    const plugins = config.configuration.network?.binding ?? {};
    if (iface.binding && !Object.hasOwn(plugins, iface.binding.name ?? '')) {
      errs.push(
        fieldError(
          ifPath.child('binding', 'name'),
          `logical ${iface.name} interface requests a binding plugin ${iface.binding.name} that is not configured in kubevirt-config`,
        ),
      );
    }
  }
  if (iface.masquerade && iface.macAddress?.toLowerCase() === reservedMasqueradeMAC) {
    errs.push(
      fieldError(
        ifPath.child('macAddress'),
        'The requested MAC address is reserved for the in-pod bridge. Please choose another one.',
      ),
    );
  }
  if (iface.model && !validInterfaceModels.has(iface.model)) {
    errs.push(
      fieldError(
        ifPath.child('model'),
        `interface ${namePath} uses model ${iface.model} that is not supported.`,
        'FieldValueNotSupported',
      ),
    );
  }
  if (iface.macAddress && longMacRe.test(iface.macAddress)) {
    // EUI-64 and InfiniBand forms parse upstream (net.ParseMAC) but are longer than a NIC's.
    errs.push(
      fieldError(
        ifPath.child('macAddress'),
        `interface ${namePath} has MAC address (${iface.macAddress}) that is too long.`,
      ),
    );
  } else if (iface.macAddress && !macRe.test(iface.macAddress)) {
    errs.push(
      fieldError(
        ifPath.child('macAddress'),
        `interface ${namePath} has malformed MAC address (${iface.macAddress}).`,
      ),
    );
  }
  if (iface.pciAddress && !pciAddressRe.test(iface.pciAddress)) {
    errs.push(
      fieldError(
        ifPath.child('pciAddress'),
        `interface ${namePath} has malformed PCI address (${iface.pciAddress}).`,
      ),
    );
  }
  if (net?.pod) {
    const names = new Set<string>();
    // kubevirt-ts also refuses the same port and protocol forwarded twice (one DNAT rule each).
    const forwarded = new Set<string>();
    (iface.ports ?? []).forEach((port, pIdx) => {
      const portPath = ifPath.child('ports').index(pIdx);
      const key = `${port.port}/${port.protocol ?? 'TCP'}`;
      if (forwarded.has(key)) {
        errs.push(
          fieldError(
            portPath.child('port'),
            `Duplicate port ${key} on interface ${iface.name}`,
            'FieldValueDuplicate',
          ),
        );
      }
      forwarded.add(key);
      if (!port.port) errs.push(fieldError(portPath, 'Port field is mandatory.', 'FieldValueRequired'));
      // Upstream admits 65536 (its check is `> 65536`) and the launcher then fails: refused here.
      else if (port.port < 0 || port.port > 65535)
        errs.push(fieldError(portPath.child('port'), 'Port field must be in range 0 < x < 65536.'));
      // An explicit "" is no protocol the launcher can forward (absent means TCP).
      if (port.protocol !== undefined && port.protocol !== 'TCP' && port.protocol !== 'UDP') {
        errs.push(fieldError(portPath.child('protocol'), 'Unknown protocol, only TCP or UDP allowed'));
      }
      if (port.name) {
        if (names.has(port.name)) {
          errs.push(
            fieldError(
              portPath.child('name'),
              `Duplicate name of the port: ${port.name}`,
              'FieldValueDuplicate',
            ),
          );
        }
        if (!isValidPortName(port.name)) {
          errs.push(fieldError(portPath.child('name'), `Invalid name of the port: ${port.name}`));
        }
        names.add(port.name);
      }
    });
  }
  (iface.dhcpOptions?.ntpServers ?? []).forEach((ip, i) => {
    if (!/^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/.test(ip)) {
      errs.push(
        fieldError(
          ifPath.child('dhcpOptions', 'ntpServers').index(i),
          'NTP servers must be a list of valid IPv4 addresses.',
        ),
      );
    }
  });
  const seen = new Set<number>();
  for (const opt of iface.dhcpOptions?.privateOptions ?? []) {
    if (opt.option < 224 || opt.option > 254) {
      errs.push(
        fieldError(field, 'provided DHCPPrivateOptions are out of range, must be in range 224 to 254'),
      );
    }
    if (seen.has(opt.option)) {
      errs.push(fieldError(field, 'Found Duplicates: you have provided duplicate DHCPPrivateOptions'));
    }
    seen.add(opt.option);
  }
  return errs;
}

/** Network and interface rules; `field` is the spec's path (`spec` or `spec.template.spec`). */
export function validateNetworking(
  field: FieldPath,
  spec: VirtualMachineInstanceSpec,
  config: ClusterConfig,
): FieldError[] {
  const interfaces = spec.domain?.devices?.interfaces ?? [];
  const networks = spec.networks ?? [];
  if (interfaces.length > arrayLenMax) {
    const p = field.child('domain', 'devices', 'interfaces');
    return [fieldError(p, `${p} list exceeds the ${arrayLenMax} element limit in length`)];
  }
  if (networks.length > arrayLenMax) {
    const p = field.child('networks');
    return [fieldError(p, `${p} list exceeds the ${arrayLenMax} element limit in length`)];
  }
  if (countPodInterfaces(spec) > 1) {
    const p = field.child('interfaces');
    return [
      fieldError(p, `more than one interface is connected to a pod network in ${p}`, 'FieldValueDuplicate'),
    ];
  }
  const errs = [...validateNetworks(field, networks), ...validateInterfaceStates(field, spec)];
  const byName = new Map<string, Network>();
  for (const n of networks) byName.set(n.name, n);
  const used = new Set<string>();
  interfaces.forEach((iface, idx) => {
    errs.push(...validateInterface(field, idx, iface, byName.get(iface.name), config));
    if (used.has(iface.name)) {
      errs.push(
        fieldError(
          field.child('domain', 'devices', 'interfaces').index(idx).child('name'),
          'Only one interface can be connected to one specific network',
          'FieldValueDuplicate',
        ),
      );
    }
    used.add(iface.name);
  });
  const seenNets = new Set<string>();
  networks.forEach((net, i) => {
    const p = field.child('networks').index(i).child('name');
    if (seenNets.has(net.name)) {
      errs.push(
        fieldError(
          p,
          `Network with name "${net.name}" already exists, every network must have a unique name`,
          'FieldValueDuplicate',
        ),
      );
    }
    seenNets.add(net.name);
    if (!used.has(net.name)) errs.push(fieldError(p, `${p} '${net.name}' not found.`, 'FieldValueRequired'));
  });
  return errs;
}

/** Why a Multus networkName is not `[namespace/]name` (a DNS-1123 label, a DNS-1123 subdomain). */
function multusNetworkNameProblems(value: string): string[] {
  const parts = value.split('/');
  if (parts.length > 2) return ['at most one "/" may separate the namespace from the name'];
  const name = parts[parts.length - 1];
  const ns = parts.length === 2 ? parts[0] : undefined;
  return [
    ...(ns === undefined ? [] : isDNS1123Label(ns).map((m) => `namespace: ${m}`)),
    ...isDNS1123Subdomain(name).map((m) => `name: ${m}`),
  ];
}
