/**
 * Validation of a VirtualMachineInstanceSpec, shared by VMIs and by the templates of VMs,
 * ReplicaSets and Pools (upstream's `ValidateVirtualMachineInstanceSpec`).
 */
import type { ClusterConfig } from '../config/cluster-config';
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { VirtualMachineInstanceSpec } from '../generated/types';
import { validateAffinity } from './affinity';
import { isDNS1123Label, isDNS1123Subdomain } from './names';
import { validateUnsupportedVmiFields } from './unsupported-fields';
import { validateAccessCredentials } from './vmi-access-credentials';
import { validateCompute } from './vmi-compute';
import { validateDevices } from './vmi-devices';
import { validateHypervisorValues } from './vmi-hypervisor-values';
import { validateNetworking } from './vmi-network';
import { validateDisks, validateVolumes } from './vmi-storage';

const evictionStrategies = ['LiveMigrate', 'LiveMigrateIfPossible', 'None', 'External'];
const dnsPolicies = ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None', ''];
const ipv4Re = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;
const ipv6Re = /^[0-9a-fA-F:]+(%\w+)?$/;

function validateNames(field: FieldPath, spec: VirtualMachineInstanceSpec): FieldError[] {
  const errs: FieldError[] = [];
  if (spec.hostname) {
    const e = isDNS1123Label(spec.hostname);
    if (e.length) {
      const p = field.child('hostname');
      errs.push(fieldError(p, `${p} does not conform to the kubernetes DNS_LABEL rules : ${e.join(', ')}`));
    }
  }
  if (spec.subdomain) {
    const e = isDNS1123Subdomain(spec.subdomain);
    if (e.length) {
      const p = field.child('subdomain');
      errs.push(
        fieldError(p, `${p} does not conform to the kubernetes DNS_SUBDOMAIN rules : ${e.join(', ')}`),
      );
    }
  }
  return errs;
}

function validateScheduling(
  field: FieldPath,
  spec: VirtualMachineInstanceSpec,
  config: ClusterConfig,
): FieldError[] {
  const errs: FieldError[] = [];
  if (spec.startStrategy !== undefined) {
    const p = field.child('startStrategy');
    if (spec.startStrategy !== 'Paused') {
      errs.push(fieldError(p, `${p} is set with an unrecognized option: ${spec.startStrategy}`));
    } else if (spec.livenessProbe) {
      errs.push(
        fieldError(
          p,
          `either ${p} or ${field.child('livenessProbe')} should be provided.Pausing VMI with LivenessProbe is not supported`,
        ),
      );
    }
  }
  const eviction = spec.evictionStrategy ?? config.evictionStrategy;
  if (eviction !== undefined && !evictionStrategies.includes(eviction)) {
    const p = field.child('evictionStrategy');
    errs.push(fieldError(p, `${p} is set with an unrecognized option: ${eviction}`));
  }
  if (spec.dnsPolicy !== undefined && !dnsPolicies.includes(spec.dnsPolicy)) {
    errs.push(
      fieldError(
        field.child('dnsPolicy'),
        `DNSPolicy: ${spec.dnsPolicy} is not supported, valid values: [${dnsPolicies.join(' ')}]`,
        'FieldValueNotSupported',
      ),
    );
  }
  const dns = spec.dnsConfig;
  const dp = field.child('dnsConfig');
  if (spec.dnsPolicy === 'None') {
    if (!dns) {
      errs.push(fieldError(dp, 'must provide `dnsConfig` when `dnsPolicy` is None', 'FieldValueRequired'));
    } else if (!dns.nameservers?.length) {
      errs.push(
        fieldError(
          dp.child('nameservers'),
          'must provide at least one DNS nameserver when `dnsPolicy` is None',
          'FieldValueRequired',
        ),
      );
    }
  }
  if (dns) {
    const ns = dns.nameservers ?? [];
    if (ns.length > 3)
      errs.push(
        fieldError(dp.child('nameservers'), `must not have more than 3 nameservers: [${ns.join(' ')}]`),
      );
    for (const n of ns) {
      if (!ipv4Re.test(n) && !(n.includes(':') && ipv6Re.test(n))) {
        errs.push(fieldError(dp.child('nameservers'), `must be valid IP address: ${n}`));
      }
    }
    const searches = dns.searches ?? [];
    if (searches.length > 6)
      errs.push(fieldError(dp.child('searches'), 'must not have more than 6 search paths'));
    if (searches.join(' ').length > 256) {
      errs.push(
        fieldError(
          dp.child('searches'),
          'must not have more than 256 characters (including spaces) in the search list',
        ),
      );
    }
    for (const s of searches)
      for (const m of isDNS1123Subdomain(s)) errs.push(fieldError(dp.child('searches'), m));
    for (const o of dns.options ?? []) {
      if (!o.name) errs.push(fieldError(dp.child('options'), 'Option.Name must not be empty'));
    }
  }
  return errs;
}

/**
 * Every rule of upstream's shared VMI spec validation; `field` is where the spec sits
 * (`spec` for a VMI, `spec.template.spec` for a VM). Returns all errors found.
 */
export function validateVirtualMachineInstanceSpec(
  field: FieldPath,
  spec: VirtualMachineInstanceSpec | undefined,
  config: ClusterConfig,
): FieldError[] {
  if (!spec || typeof spec !== 'object') return [fieldError(field, 'Required value', 'FieldValueRequired')];
  if (!spec.domain || typeof spec.domain !== 'object') {
    return [fieldError(field.child('domain'), 'Required value', 'FieldValueRequired')];
  }
  const s: VirtualMachineInstanceSpec = spec.domain.devices
    ? spec
    : { ...spec, domain: { ...spec.domain, devices: {} } };
  return [
    ...validateNames(field, s),
    ...validateAffinity(field, s.affinity),
    ...validateCompute(field, s, config),
    ...validateNetworking(field, s, config),
    ...validateDisks(field, s, config),
    ...validateDevices(field, s, config),
    ...validateHypervisorValues(field, s),
    ...validateVolumes(field, s, config),
    ...validateAccessCredentials(field, s),
    ...validateScheduling(field, s, config),
    ...validateUnsupportedVmiFields(field, s),
  ];
}
