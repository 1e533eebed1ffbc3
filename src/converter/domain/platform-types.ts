/**
 * The libvirt domain XML model (./types) of what the guest runs on: memory backing, OS and
 * firmware, SMBIOS, features and Hyper-V enlightenments, CPU model and topology, vCPU
 * placement, NUMA, clock and timers, launch security
 * (https://libvirt.org/formatdomain.html).
 */
import type { Empty, FeatureState, OnOff, YesNo } from './basic-types';

export interface HugePage {
  size: number;
  unit?: string;
  nodeset?: string;
}

export interface MemoryBacking {
  hugepages?: { page?: HugePage[] };
  nosharepages?: Empty;
  locked?: Empty;
  source?: { type: 'file' | 'anonymous' | 'memfd' };
  access?: { mode: 'shared' | 'private' };
  allocation?: { mode: 'immediate' | 'ondemand' };
}

export interface OSType {
  arch?: string;
  machine?: string;
  value: string;
}

export interface Loader {
  readonly?: YesNo;
  secure?: YesNo;
  type?: 'rom' | 'pflash';
  value?: string;
}

export interface NVRam {
  template?: string;
  value?: string;
}

export interface OS {
  type: OSType;
  loader?: Loader;
  nvram?: NVRam;
  kernel?: string;
  initrd?: string;
  cmdline?: string;
  boot?: { dev: string }[];
  bootmenu?: { enable: YesNo; timeout?: number };
  bios?: { useserial?: YesNo };
  smbios?: { mode: 'sysinfo' | 'host' | 'emulate' };
  acpi?: { table: { type: 'slic' | 'msdm'; value: string }[] };
}

export interface SysInfoEntry {
  name: string;
  value?: string;
}

export interface SysInfo {
  type: 'smbios';
  bios?: { entry?: SysInfoEntry[] };
  system?: { entry?: SysInfoEntry[] };
  baseBoard?: { entry?: SysInfoEntry[] };
  chassis?: { entry?: SysInfoEntry[] };
}

export interface HyperVSpinlocks {
  state: OnOff;
  retries?: number;
}

export interface HyperV {
  mode?: 'custom' | 'passthrough';
  relaxed?: FeatureState;
  vapic?: FeatureState;
  spinlocks?: HyperVSpinlocks;
  vpindex?: FeatureState;
  runtime?: FeatureState;
  synic?: FeatureState;
  stimer?: FeatureState & { direct?: FeatureState };
  reset?: FeatureState;
  vendor_id?: { state: OnOff; value?: string };
  frequencies?: FeatureState;
  reenlightenment?: FeatureState;
  tlbflush?: FeatureState;
  ipi?: FeatureState;
  evmcs?: FeatureState;
}

export interface Features {
  acpi?: Empty;
  apic?: { eoi?: OnOff };
  hyperv?: HyperV;
  kvm?: { hidden?: FeatureState; 'hint-dedicated'?: FeatureState };
  pvspinlock?: FeatureState;
  pmu?: FeatureState;
  vmport?: FeatureState;
  smm?: FeatureState;
  ioapic?: { driver: 'kvm' | 'qemu' };
}

export interface CPUFeature {
  policy: 'force' | 'require' | 'optional' | 'disable' | 'forbid';
  name: string;
}

export interface NUMACell {
  id: number;
  cpus: string;
  memory: number;
  unit?: string;
  memAccess?: 'shared' | 'private';
}

export interface CPU {
  mode?: 'host-model' | 'host-passthrough' | 'custom' | 'maximum';
  match?: 'minimum' | 'exact' | 'strict';
  check?: 'none' | 'partial' | 'full';
  model?: { fallback?: 'allow' | 'forbid'; value: string };
  topology?: { sockets: number; dies?: number; cores: number; threads: number };
  feature?: CPUFeature[];
  numa?: { cell: NUMACell[] };
}

export interface VCPU {
  placement?: 'static' | 'auto';
  current?: number;
  value: number;
}

/** `<vcpus>`: per-vCPU state for CPU hotplug. */
export interface VCPUs {
  vcpu: { id: number; enabled: YesNo; hotpluggable: YesNo; order?: number }[];
}

export interface CPUTune {
  vcpupin?: { vcpu: number; cpuset: string }[];
  emulatorpin?: { cpuset: string };
  iothreadpin?: { iothread: number; cpuset: string }[];
  vcpusched?: { vcpus: string; scheduler: 'batch' | 'idle' | 'fifo' | 'rr' | 'other'; priority?: number }[];
}

export interface NUMATune {
  memory?: { mode: 'strict' | 'preferred' | 'interleave' | 'restrictive'; nodeset?: string };
  memnode?: {
    cellid: number;
    mode: 'strict' | 'preferred' | 'interleave' | 'restrictive';
    nodeset: string;
  }[];
}

export interface Timer {
  name: 'rtc' | 'pit' | 'hpet' | 'kvmclock' | 'hypervclock' | 'tsc';
  tickpolicy?: 'delay' | 'catchup' | 'merge' | 'discard';
  present?: YesNo;
  track?: 'boot' | 'guest' | 'wall' | 'realtime';
  frequency?: number;
}

export interface Clock {
  offset: 'utc' | 'localtime' | 'timezone' | 'variable';
  timezone?: string;
  adjustment?: string;
  basis?: 'utc' | 'localtime';
  timer?: Timer[];
}

export interface LaunchSecurity {
  type: 'sev' | 'sev-snp' | 's390-pv';
  cbitpos?: number;
  reducedPhysBits?: number;
  policy?: string;
  dhCert?: string;
  session?: string;
}
