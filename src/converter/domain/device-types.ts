/**
 * The libvirt domain XML model (./types) of `<devices>`: disks, interfaces, controllers,
 * consoles and channels, host devices, filesystems and the rest
 * (https://libvirt.org/formatdomain.html#devices).
 */
import type { Address, Alias, Empty, OnOff, SizedValue, YesNo } from './basic-types';

/** A disk's `<driver>`: QEMU's image format, cache and I/O modes, error policy, iothread and queues. */
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

/** A disk's `<source>`: the file, block device or directory behind it. */
export interface DiskSource {
  file?: string;
  dev?: string;
  dir?: string;
  name?: string;
}

/** A disk's `<backingStore>`: the image under an overlay (e.g. a container disk under its qcow2 overlay). */
export interface BackingStore {
  type?: 'file' | 'block';
  format?: { type: 'raw' | 'qcow2' };
  source?: DiskSource;
}

/** `<disk>`: a disk, cdrom, floppy or LUN of the guest, its source, bus and boot order. */
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

/** `<interface>`: a guest NIC (tap, bridge, passt, SR-IOV hostdev, vhost-user), its MAC and model. */
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

/** `<controller>`: a USB, SCSI, virtio-serial, PCI, SATA or IDE controller. */
export interface Controller {
  type: 'usb' | 'scsi' | 'virtio-serial' | 'pci' | 'sata' | 'ide';
  index: number;
  model?: string;
  ports?: number;
  driver?: { iothread?: number; queues?: number; iommu?: OnOff };
  alias?: Alias;
  address?: Address;
}

/** `<input>`: a tablet, mouse or keyboard. */
export interface Input {
  type: 'tablet' | 'mouse' | 'keyboard';
  bus?: 'usb' | 'virtio' | 'ps2';
  model?: string;
  alias?: Alias;
  address?: Address;
}

/** `<graphics>`: the VNC (or SPICE) display server and where it listens. */
export interface Graphics {
  type: 'vnc' | 'spice';
  autoport?: YesNo;
  port?: number;
  socket?: string;
  listen?: { type: 'address' | 'socket' | 'none'; address?: string; socket?: string }[];
}

/** `<video>`: the guest's video card model. */
export interface Video {
  model: { type: string; heads?: number; vram?: number; primary?: YesNo };
  alias?: Alias;
}

/** The `<source>` of a character device: a UNIX socket path, bound or connected to. */
export interface CharSource {
  mode?: 'bind' | 'connect';
  path?: string;
}

/** `<log>` of a character device: the file its output is copied to. */
export interface CharLog {
  file: string;
  append?: OnOff;
}

/** `<serial>`: a serial port, backed by a UNIX socket, pty or file. */
export interface Serial {
  type: 'unix' | 'pty' | 'file';
  source?: CharSource;
  target?: { port?: number; type?: string };
  log?: CharLog;
  alias?: Alias;
}

/** `<console>`: the guest console, on a serial port or virtio. */
export interface Console {
  type: 'unix' | 'pty';
  source?: CharSource;
  target?: { type: 'serial' | 'virtio'; port?: number };
  alias?: Alias;
}

/** `<channel>`: a host-guest channel (e.g. the guest agent's virtio-serial socket). */
export interface Channel {
  type: 'unix' | 'spicevmc';
  source?: CharSource;
  target: { type: 'virtio' | 'guestfwd'; name?: string; state?: 'connected' | 'disconnected' };
  alias?: Alias;
  address?: Address;
}

/** `<memballoon>`: the memory balloon device, and its stats period. */
export interface MemBalloon {
  model: 'virtio' | 'virtio-non-transitional' | 'virtio-transitional' | 'none';
  freePageReporting?: OnOff;
  stats?: { period: number };
  driver?: { iommu?: OnOff };
  alias?: Alias;
  address?: Address;
}

/** `<memory model="virtio-mem">`: hot-pluggable guest memory (sizes in KiB unless `unit` says). */
export interface MemoryDevice {
  model: 'virtio-mem';
  target: {
    size: SizedValue;
    node: number;
    block: SizedValue;
    requested: SizedValue;
    /** What the guest has plugged (libvirt reports it; never written). */
    current?: SizedValue;
  };
  alias?: Alias;
  address?: Address;
}

/** `<rng>`: a virtio random number generator and its host entropy backend. */
export interface Rng {
  model: 'virtio' | 'virtio-non-transitional' | 'virtio-transitional';
  backend: { model: 'random' | 'egd'; value?: string };
  driver?: { iommu?: OnOff };
  alias?: Alias;
  address?: Address;
}

/** `<watchdog>`: an emulated watchdog and the action when it fires. */
export interface Watchdog {
  model: 'i6300esb' | 'ib700' | 'diag288' | 'itco';
  action?: 'reset' | 'shutdown' | 'poweroff' | 'pause' | 'none' | 'dump' | 'inject-nmi';
  alias?: Alias;
}

/** `<tpm>`: a TPM, emulated (swtpm) or passed through. */
export interface TPM {
  model: 'tpm-tis' | 'tpm-crb' | 'spapr-tpm-proxy';
  backend: {
    type: 'emulator' | 'passthrough';
    version?: '1.2' | '2.0';
    persistent_state?: YesNo;
  };
  alias?: Alias;
}

/** A host device's `<source>`: its PCI/mdev address or USB vendor and product ids. */
export interface HostDevSource {
  address?: Address;
  vendor?: { id: string };
  product?: { id: string };
}

/** `<hostdev>`: a host PCI, USB, mediated or SCSI device assigned to the guest. */
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

/** `<filesystem>`: a host directory shared with the guest (virtiofs). */
export interface FileSystem {
  type: 'mount';
  accessmode?: 'passthrough' | 'mapped' | 'squash';
  driver?: { type: 'virtiofs' | 'path'; queue?: number; iommu?: OnOff };
  binary?: { path: string };
  source: { dir?: string; socket?: string };
  target: { dir: string };
  alias?: Alias;
}

/** `<sound>`: an emulated sound card. */
export interface Sound {
  model: 'ich9' | 'ac97' | 'ich6' | 'usb';
  alias?: Alias;
}

/** `<panic>`: a panic notifier device (e.g. pvpanic, hyperv). */
export interface Panic {
  model?: 'isa' | 'hyperv' | 'pvpanic' | 's390' | 'pseries';
  alias?: Alias;
}

/** `<vsock>`: a virtio vsock device and its context id (CID). */
export interface VSock {
  model: 'virtio' | 'virtio-non-transitional' | 'virtio-transitional';
  cid: { auto: YesNo; address?: number };
  driver?: { iommu?: OnOff };
  alias?: Alias;
}

/** `<redirdev>`: a USB redirection channel. */
export interface RedirDev {
  bus: 'usb';
  type: 'unix' | 'spicevmc' | 'tcp';
  source?: CharSource;
  alias?: Alias;
}

/** `<devices>`: every device of the domain, and the emulator binary. */
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
  memory?: MemoryDevice[];
  rng?: Rng[];
  panic?: Panic[];
  vsock?: VSock;
}
