/**
 * What virt-handler advertises on its Node, from the driver's host probe: upstream's
 * node-labeller labels (schedulable, CPU models and features, machine types, SEV) and the
 * device resources launcher pods request. Pure.
 */
import type { HostCapabilities } from '../../drivers/driver';

/** Label prefixes and names (upstream values). */
export const NodeLabels = {
  schedulable: 'kubevirt.io/schedulable',
  cpuModel: 'cpu-model.node.kubevirt.io/',
  cpuFeature: 'cpu-feature.node.kubevirt.io/',
  machineType: 'machine-type.node.kubevirt.io/',
  sev: 'kubevirt.io/sev',
  sevEs: 'kubevirt.io/sev-es',
  sevSnp: 'kubevirt.io/sev-snp',
  heartbeat: 'kubevirt.io/heartbeat',
} as const;

/** How many of each shareable device the node offers (upstream's device plugins offer 1000). */
export const SHARED_DEVICE_COUNT = 1000;

// A label name (the part after the prefix) as the API server accepts it.
const LABEL_NAME = /^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** Node labels for a host with `caps`, plus `extra` (plugin labels). Names that are not valid label names are left out. */
export function nodeLabelsFor(
  caps: HostCapabilities,
  extra: Record<string, string> = {},
): Record<string, string> {
  const out: Record<string, string> = { [NodeLabels.schedulable]: 'true' };
  const add = (prefix: string, name: string) => {
    if (LABEL_NAME.test(name)) out[prefix + name] = 'true';
  };
  for (const m of caps.cpuModels) add(NodeLabels.cpuModel, m);
  for (const f of caps.cpuFeatures) add(NodeLabels.cpuFeature, f);
  for (const m of caps.machineTypes) add(NodeLabels.machineType, m);
  if (caps.sev?.sev) out[NodeLabels.sev] = 'true';
  if (caps.sev?.sevEs) out[NodeLabels.sevEs] = 'true';
  if (caps.sev?.sevSnp) out[NodeLabels.sevSnp] = 'true';
  return { ...out, ...extra };
}

/**
 * Device resources (capacity = allocatable) for a host with `caps`, `count` of each shared
 * device (upstream's --max-devices), plus `extra` (plugin resources).
 */
export function nodeDeviceResources(
  caps: HostCapabilities,
  extra: Record<string, number> = {},
  count = SHARED_DEVICE_COUNT,
): Record<string, string> {
  const out: Record<string, string> = {
    'devices.kubevirt.io/kvm': String(caps.kvmUsable ? count : 0),
    'devices.kubevirt.io/tun': String(count),
    'devices.kubevirt.io/vhost-net': String(count),
    'devices.kubevirt.io/sev': String(caps.sev?.sev ? caps.sev.maxGuests : 0),
  };
  for (const [k, v] of Object.entries(extra)) out[k] = String(v);
  return out;
}
