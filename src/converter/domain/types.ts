/**
 * A typed model of the libvirt domain XML that the converter emits and the launcher reads
 * back (see https://libvirt.org/formatdomain.html). Property names are the XML names:
 * attributes and child elements are both plain properties (the table in `schema.ts` says
 * which is which), `value` holds the text of an element that also has attributes, an element with only text is a plain string or number, and a present-but-empty element such
 * as `<acpi/>` is `{}`. Repeated elements are arrays.
 */

/** `yes`/`no` switches, as libvirt spells most booleans. */
export type YesNo = 'yes' | 'no';
/** `on`/`off` switches (features, hyperv, memballoon options). */
export type OnOff = 'on' | 'off';

/** A bare marker element such as `<acpi/>`. */
export type Empty = Record<string, never>;

/** A feature switch element: `<smm state="on"/>`. */
export interface FeatureState {
  state?: OnOff;
}

/** A device address (`pci`, `drive`, `usb`, `virtio-serial`, ...). */
export interface Address {
  /** Absent only for a mediated device's `<address uuid=.../>`. */
  type?: string;
  domain?: string;
  bus?: string;
  slot?: string;
  function?: string;
  controller?: string;
  target?: string;
  unit?: string;
  port?: string;
  device?: string;
  uuid?: string;
  multifunction?: OnOff;
}

/** `<alias name="ua-..."/>`: KubeVirt names user-visible devices `ua-<name>`. */
export interface Alias {
  name: string;
}

/** `<memory unit="KiB">1048576</memory>` and its siblings. */
export interface SizedValue {
  unit?: string;
  value: number;
}

export interface KubeVirtMetadata {
  xmlns: string;
  uid?: string;
  graceperiod?: { deletionGracePeriodSeconds?: number; deletionTimestamp?: string };
}

export interface Metadata {
  kubevirt?: KubeVirtMetadata;
}

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

export interface DiskDriver {
  name: 'qemu';
  type?: 'raw' | 'qcow2';
  cache?: 'none' | 'writethrough' | 'writeback' | 'directsync' | 'unsafe';
  io?: 'native' | 'threads' | 'io_uring';
  error_policy?: 'stop' | 'report' | 'ignore' | 'enospace';
  discard?: 'unmap' | 'ignore';
  iothread?: number;
  queues?: number;
  iommu?: OnOff;
}

export interface DiskSource {
  file?: string;
  dev?: string;
  dir?: string;
  name?: string;
}

export interface BackingStore {
  type?: 'file' | 'block';
  format?: { type: 'raw' | 'qcow2' };
  source?: DiskSource;
}

export interface Disk {
  type: 'file' | 'block' | 'dir' | 'network' | 'volume';
  device: 'disk' | 'cdrom' | 'floppy' | 'lun';
  model?: string;
  driver?: DiskDriver;
  source?: DiskSource;
  backingStore?: BackingStore;
  target: { dev: string; bus?: string; tray?: 'open' | 'closed'; removable?: OnOff };
  iotune?: Record<string, never>;
  serial?: string;
  boot?: { order: number };
  readonly?: Empty;
  shareable?: Empty;
  alias?: Alias;
  address?: Address;
  blockio?: { logical_block_size?: number; physical_block_size?: number };
}

export interface Interface {
  type: 'ethernet' | 'bridge' | 'network' | 'user' | 'hostdev' | 'vhostuser';
  managed?: YesNo;
  trustGuestRxFilters?: YesNo;
  mac?: { address: string };
  source?: { bridge?: string; network?: string; dev?: string; address?: Address };
  target?: { dev: string; managed?: YesNo };
  model?: { type: string };
  /** `type="user"` with libvirt's passt backend (the passt binding). */
  backend?: { type: 'passt'; logFile?: string };
  /** Ports passt forwards to the guest (none: passt's default, every port). */
  portForward?: {
    proto: 'tcp' | 'udp';
    dev?: string;
    range?: { start: number; end?: number; exclude?: YesNo }[];
  }[];
  driver?: { name?: string; queues?: number; iommu?: OnOff };
  mtu?: { size: number };
  link?: { state: 'up' | 'down' };
  rom?: { enabled?: YesNo; bar?: OnOff; file?: string };
  boot?: { order: number };
  alias?: Alias;
  address?: Address;
  acpi?: { index: number };
}

export interface Controller {
  type: 'usb' | 'scsi' | 'virtio-serial' | 'pci' | 'sata' | 'ide';
  index: number;
  model?: string;
  ports?: number;
  driver?: { iothread?: number; queues?: number; iommu?: OnOff };
  alias?: Alias;
  address?: Address;
}

export interface Input {
  type: 'tablet' | 'mouse' | 'keyboard';
  bus?: 'usb' | 'virtio' | 'ps2';
  model?: string;
  alias?: Alias;
  address?: Address;
}

export interface Graphics {
  type: 'vnc' | 'spice';
  autoport?: YesNo;
  port?: number;
  socket?: string;
  listen?: { type: 'address' | 'socket' | 'none'; address?: string; socket?: string }[];
}

export interface Video {
  model: { type: string; heads?: number; vram?: number; primary?: YesNo };
  alias?: Alias;
}

export interface CharSource {
  mode?: 'bind' | 'connect';
  path?: string;
}

export interface CharLog {
  file: string;
  append?: OnOff;
}

export interface Serial {
  type: 'unix' | 'pty' | 'file';
  source?: CharSource;
  target?: { port?: number; type?: string };
  log?: CharLog;
  alias?: Alias;
}

export interface Console {
  type: 'unix' | 'pty';
  source?: CharSource;
  target?: { type: 'serial' | 'virtio'; port?: number };
  alias?: Alias;
}

export interface Channel {
  type: 'unix' | 'spicevmc';
  source?: CharSource;
  target: { type: 'virtio' | 'guestfwd'; name?: string; state?: 'connected' | 'disconnected' };
  alias?: Alias;
  address?: Address;
}

export interface MemBalloon {
  model: 'virtio' | 'virtio-non-transitional' | 'virtio-transitional' | 'none';
  freePageReporting?: OnOff;
  stats?: { period: number };
  driver?: { iommu?: OnOff };
  alias?: Alias;
  address?: Address;
}

export interface Rng {
  model: 'virtio' | 'virtio-non-transitional' | 'virtio-transitional';
  backend: { model: 'random' | 'egd'; value?: string };
  driver?: { iommu?: OnOff };
  alias?: Alias;
  address?: Address;
}

export interface Watchdog {
  model: 'i6300esb' | 'ib700' | 'diag288' | 'itco';
  action?: 'reset' | 'shutdown' | 'poweroff' | 'pause' | 'none' | 'dump' | 'inject-nmi';
  alias?: Alias;
}

export interface TPM {
  model: 'tpm-tis' | 'tpm-crb' | 'spapr-tpm-proxy';
  backend: {
    type: 'emulator' | 'passthrough';
    version?: '1.2' | '2.0';
    persistent_state?: YesNo;
  };
  alias?: Alias;
}

export interface HostDevSource {
  address?: Address;
  vendor?: { id: string };
  product?: { id: string };
}

export interface HostDev {
  mode: 'subsystem' | 'capabilities';
  type: 'pci' | 'usb' | 'mdev' | 'scsi';
  managed?: YesNo;
  model?: string;
  display?: OnOff;
  ramfb?: OnOff;
  source: HostDevSource;
  boot?: { order: number };
  rom?: { bar?: OnOff };
  alias?: Alias;
  address?: Address;
}

export interface FileSystem {
  type: 'mount';
  accessmode?: 'passthrough' | 'mapped' | 'squash';
  driver?: { type: 'virtiofs' | 'path'; queue?: number; iommu?: OnOff };
  binary?: { path: string };
  source: { dir?: string; socket?: string };
  target: { dir: string };
  alias?: Alias;
}

export interface Sound {
  model: 'ich9' | 'ac97' | 'ich6' | 'usb';
  alias?: Alias;
}

export interface Panic {
  model?: 'isa' | 'hyperv' | 'pvpanic' | 's390' | 'pseries';
  alias?: Alias;
}

export interface VSock {
  model: 'virtio' | 'virtio-non-transitional' | 'virtio-transitional';
  cid: { auto: YesNo; address?: number };
  driver?: { iommu?: OnOff };
  alias?: Alias;
}

export interface RedirDev {
  bus: 'usb';
  type: 'unix' | 'spicevmc' | 'tcp';
  source?: CharSource;
  alias?: Alias;
}

export interface Devices {
  emulator?: string;
  disk?: Disk[];
  controller?: Controller[];
  filesystem?: FileSystem[];
  interface?: Interface[];
  serial?: Serial[];
  console?: Console[];
  channel?: Channel[];
  input?: Input[];
  tpm?: TPM[];
  graphics?: Graphics[];
  sound?: Sound[];
  video?: Video[];
  hostdev?: HostDev[];
  redirdev?: RedirDev[];
  watchdog?: Watchdog[];
  memballoon?: MemBalloon;
  rng?: Rng[];
  panic?: Panic[];
  vsock?: VSock;
}

/** The root `<domain>` element. */
export interface Domain {
  type: 'kvm' | 'qemu';
  name: string;
  uuid?: string;
  metadata?: Metadata;
  maxMemory?: SizedValue & { slots: number };
  memory: SizedValue;
  currentMemory?: SizedValue;
  memoryBacking?: MemoryBacking;
  vcpu?: VCPU;
  vcpus?: VCPUs;
  iothreads?: number;
  cputune?: CPUTune;
  numatune?: NUMATune;
  sysinfo?: SysInfo;
  os: OS;
  features?: Features;
  cpu?: CPU;
  clock?: Clock;
  on_poweroff?: 'destroy' | 'restart' | 'preserve';
  on_reboot?: 'restart' | 'destroy';
  on_crash?: 'destroy' | 'restart' | 'preserve' | 'coredump-destroy' | 'coredump-restart';
  devices: Devices;
  launchSecurity?: LaunchSecurity;
}
