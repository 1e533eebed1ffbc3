/**
 * The libvirt domain XML model (./types) of what the guest runs on: memory backing, OS and
 * firmware, SMBIOS, features and Hyper-V enlightenments, CPU model and topology, vCPU
 * placement, NUMA, clock and timers, launch security
 * (https://libvirt.org/formatdomain.html).
 */
import type { Empty, FeatureState, OnOff, YesNo } from './basic-types';

/** One `<page>` of `<hugepages>`: the huge page size, and the guest NUMA nodes it backs. */
export interface HugePage {
  size: number;
  unit?: string;
  nodeset?: string;
}

/** `<memoryBacking>`: how guest memory is backed: huge pages, file/memfd source, shared access, locking. */
export interface MemoryBacking {
  hugepages?: { page?: HugePage[] };
  nosharepages?: Empty;
  locked?: Empty;
  source?: { type: 'file' | 'anonymous' | 'memfd' };
  access?: { mode: 'shared' | 'private' };
  allocation?: { mode: 'immediate' | 'ondemand' };
}

/** The `<os>`'s `<type>`: `hvm`, with the architecture and machine type. */
export interface OSType {
  arch?: string;
  machine?: string;
  value: string;
}

/** `<loader>`: the firmware image (e.g. OVMF for EFI), read-only pflash, Secure Boot. */
export interface Loader {
  readonly?: YesNo;
  secure?: YesNo;
  type?: 'rom' | 'pflash';
  value?: string;
}

/** `<nvram>`: the guest's EFI variable store, and the template it starts from. */
export interface NVRam {
  template?: string;
  value?: string;
}

/** `<os>`: how the guest boots: firmware, kernel/initrd/cmdline, boot order and menu, SMBIOS, ACPI tables. */
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

/** An `<entry name="...">` of an SMBIOS table. */
export interface SysInfoEntry {
  name: string;
  value?: string;
}

/** `<sysinfo type="smbios">`: the SMBIOS BIOS, system, base board and chassis entries the guest sees. */
export interface SysInfo {
  type: 'smbios';
  bios?: { entry?: SysInfoEntry[] };
  system?: { entry?: SysInfoEntry[] };
  baseBoard?: { entry?: SysInfoEntry[] };
  chassis?: { entry?: SysInfoEntry[] };
}

/** Hyper-V `<spinlocks>`: on/off and the retry count before the guest notifies the host. */
export interface HyperVSpinlocks {
  state: OnOff;
  retries?: number;
}

/** `<hyperv>`: Hyper-V enlightenments offered to Windows guests. */
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

/** `<features>`: ACPI, APIC, Hyper-V, KVM hiding, PMU, SMM, the IOAPIC driver and the rest. */
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

/** A CPU `<feature>`: a CPU flag and whether it is required, disabled, etc. */
export interface CPUFeature {
  policy: 'force' | 'require' | 'optional' | 'disable' | 'forbid';
  name: string;
}

/** A guest NUMA `<cell>`: its vCPUs and memory. */
export interface NUMACell {
  id: number;
  cpus: string;
  memory: number;
  unit?: string;
  memAccess?: 'shared' | 'private';
}

/** `<cpu>`: the CPU model (host-model, host-passthrough or named), topology, features, guest NUMA cells. */
export interface CPU {
  mode?: 'host-model' | 'host-passthrough' | 'custom' | 'maximum';
  match?: 'minimum' | 'exact' | 'strict';
  check?: 'none' | 'partial' | 'full';
  model?: { fallback?: 'allow' | 'forbid'; value: string };
  topology?: { sockets: number; dies?: number; cores: number; threads: number };
  feature?: CPUFeature[];
  numa?: { cell: NUMACell[] };
}

/** `<vcpu>`: the number of vCPUs (maximum; `current` of them online) and their placement. */
export interface VCPU {
  placement?: 'static' | 'auto';
  current?: number;
  value: number;
}

/** `<vcpus>`: per-vCPU state for CPU hotplug. */
export interface VCPUs {
  vcpu: { id: number; enabled: YesNo; hotpluggable: YesNo; order?: number }[];
}

/** `<cputune>`: pinning of vCPUs, the emulator and iothreads to host CPUs, and vCPU scheduling. */
export interface CPUTune {
  vcpupin?: { vcpu: number; cpuset: string }[];
  emulatorpin?: { cpuset: string };
  iothreadpin?: { iothread: number; cpuset: string }[];
  vcpusched?: { vcpus: string; scheduler: 'batch' | 'idle' | 'fifo' | 'rr' | 'other'; priority?: number }[];
}

/** `<numatune>`: which host NUMA nodes guest memory (and each guest cell) is allocated from. */
export interface NUMATune {
  memory?: { mode: 'strict' | 'preferred' | 'interleave' | 'restrictive'; nodeset?: string };
  memnode?: {
    cellid: number;
    mode: 'strict' | 'preferred' | 'interleave' | 'restrictive';
    nodeset: string;
  }[];
}

/** A clock `<timer>`: one of the guest's timers (rtc, pit, hpet, kvmclock, ...), tick policy, presence. */
export interface Timer {
  name: 'rtc' | 'pit' | 'hpet' | 'kvmclock' | 'hypervclock' | 'tsc';
  tickpolicy?: 'delay' | 'catchup' | 'merge' | 'discard';
  present?: YesNo;
  track?: 'boot' | 'guest' | 'wall' | 'realtime';
  frequency?: number;
}

/** `<clock>`: the guest clock's offset from UTC (or timezone) and its timers. */
export interface Clock {
  offset: 'utc' | 'localtime' | 'timezone' | 'variable';
  timezone?: string;
  adjustment?: string;
  basis?: 'utc' | 'localtime';
  timer?: Timer[];
}

/** `<launchSecurity>`: confidential-guest settings (AMD SEV/SEV-SNP, s390 protected virtualization). */
export interface LaunchSecurity {
  type: 'sev' | 'sev-snp' | 's390-pv';
  cbitpos?: number;
  reducedPhysBits?: number;
  policy?: string;
  dhCert?: string;
  session?: string;
}
