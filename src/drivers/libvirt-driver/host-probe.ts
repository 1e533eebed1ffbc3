/**
 * Turns libvirt's host capabilities, domain capabilities and node info into the
 * driver-neutral `HostCapabilities`. Pure functions over the XML, so tests feed them
 * fixtures; the driver fetches the XML through the libvirt client.
 */
import { XMLParser } from 'fast-xml-parser';
import type { HostCapabilities, SevCapabilities } from '../driver';

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  isArray: (name) =>
    ['guest', 'domain', 'feature', 'pages', 'model', 'machine', 'mode', 'arch', 'value', 'enum'].includes(
      name,
    ),
});

/** What the host capabilities XML (`virsh capabilities`) tells. */
export interface HostCapsInfo {
  arch: string;
  /** libvirt domain types offered for the host arch (`qemu`, `kvm`, `test`). */
  domainTypes: string[];
  cpuFeatures: string[];
  hugepageSizesKiB: number[];
  machineTypes: string[];
}

/** Parses `virsh capabilities` output. */
export function parseHostCapabilities(xml: string): HostCapsInfo {
  const caps = parser.parse(xml)?.capabilities;
  if (!caps) throw new Error('host capabilities: no <capabilities> root element');
  const cpu = caps.host?.cpu ?? {};
  const arch = String(cpu.arch ?? 'x86_64');
  const domainTypes = new Set<string>();
  const machines = new Set<string>();
  for (const g of caps.guest ?? []) {
    for (const a of g.arch ?? []) {
      if (a['@_name'] !== arch) continue;
      for (const d of a.domain ?? []) domainTypes.add(String(d['@_type']));
      for (const m of a.machine ?? []) machines.add(String(typeof m === 'object' ? m['#text'] : m));
    }
  }
  return {
    arch,
    domainTypes: [...domainTypes],
    cpuFeatures: (cpu.feature ?? []).map((f: Record<string, string>) => String(f['@_name'])),
    hugepageSizesKiB: (cpu.pages ?? [])
      .map((p: Record<string, string>) => Number(p['@_size']))
      .filter((s: number) => s > 4),
    machineTypes: [...machines],
  };
}

/** What the domain capabilities XML (`virsh domcapabilities`) tells besides SEV. */
export interface DomCapsInfo {
  maxVcpus?: number;
  cpuModels: string[];
  machine?: string;
  /**
   * `<devices><interface><enum name='backendType'>`: the backends `<interface type="user">`
   * takes (`default` = QEMU's slirp, `passt`). Absent where libvirt does not report them
   * (a libvirt whose domain capabilities predate the report: Debian 12's 9.0.0).
   */
  interfaceBackends?: string[];
}

/** Parses the CPU models and vCPU limit of `virsh domcapabilities` output. */
export function parseDomainCapabilities(xml: string): DomCapsInfo {
  const root = parser.parse(xml)?.domainCapabilities;
  if (!root) throw new Error('domain capabilities: no <domainCapabilities> root element');
  const models: string[] = [];
  for (const mode of root.cpu?.mode ?? []) {
    if (mode['@_name'] !== 'custom' || mode['@_supported'] !== 'yes') continue;
    for (const m of mode.model ?? []) {
      if (typeof m === 'object' && m['@_usable'] === 'yes') models.push(String(m['#text']));
    }
  }
  const max = Number(root.vcpu?.['@_max']);
  const iface = root.devices?.interface;
  const backends = iface?.['@_supported'] === 'yes' ? enumValues(iface, 'backendType') : undefined;
  return {
    maxVcpus: Number.isFinite(max) && max > 0 ? max : undefined,
    cpuModels: models,
    machine: root.machine === undefined ? undefined : String(root.machine),
    ...(backends ? { interfaceBackends: backends } : {}),
  };
}

/** The values of `<enum name=NAME>` under `el`, or undefined when there is no such enum. */
function enumValues(el: Record<string, unknown>, name: string): string[] | undefined {
  const e = (el.enum as Record<string, unknown>[] | undefined)?.find((x) => x['@_name'] === name);
  if (!e) return undefined;
  const values = e.value === undefined ? [] : Array.isArray(e.value) ? e.value : [e.value];
  return values.map((v) =>
    String(typeof v === 'object' && v !== null ? (v as Record<string, unknown>)['#text'] : v),
  );
}

/** Everything probed, before combining. */
export interface ProbeInputs {
  driverName: string;
  host: HostCapsInfo;
  domcaps?: DomCapsInfo;
  nodeMemoryKiB: number;
  nodeCpus: number;
  sev?: SevCapabilities;
  /** Whether KVM may be used at all (false forces emulation even where /dev/kvm exists). */
  allowKvm: boolean;
  /** The daemon's driver is libvirt's test driver, which accepts any domain type. */
  testDriver: boolean;
}

/** Combines probe results into `HostCapabilities`. */
export function toHostCapabilities(p: ProbeInputs): HostCapabilities {
  const kvmUsable = p.allowKvm && p.host.domainTypes.includes('kvm');
  const emulationAvailable = p.testDriver || p.host.domainTypes.includes('qemu');
  const machines = new Set(p.host.machineTypes);
  if (p.domcaps?.machine) machines.add(p.domcaps.machine);
  return {
    driver: p.driverName,
    arch: p.host.arch,
    kvmUsable,
    emulationAvailable,
    cpuModels: p.domcaps?.cpuModels ?? [],
    cpuFeatures: p.host.cpuFeatures,
    maxVcpus: p.domcaps?.maxVcpus ?? Math.max(1, p.nodeCpus),
    memoryBytes: p.nodeMemoryKiB * 1024,
    hugepageSizesKiB: p.host.hugepageSizesKiB,
    sev: p.sev,
    machineTypes: [...machines],
    ...(p.domcaps?.interfaceBackends ? { interfaceBackends: [...p.domcaps.interfaceBackends] } : {}),
  };
}
