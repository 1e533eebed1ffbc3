/**
 * The `HypervisorDriver` contract: what every hypervisor backend (ours or a third
 * party's) implements, and the value types it speaks. The node agent turns
 * `probe()` into node labels and device resources; the launcher calls `sync` and the
 * lifecycle operations and forwards `events()` to the handler.
 */
import type { VirtualMachineInstance } from '../api';
import type {
  CpuHotplugSupport,
  DiskHotplugSupport,
  FsFreezeSupport,
  MemoryDumpSupport,
  MemoryHotplugSupport,
  MigrationSupport,
  NicHotplugSupport,
  Screenshot,
  SevSupport,
} from './driver-capabilities';
import type { GuestAgentSupport } from './guest-agent';

export * from './driver-capabilities';

/** Host CPU architecture as libvirt names it. */
export type Arch = 'x86_64' | 'aarch64' | 's390x' | 'ppc64le' | (string & {});

/** AMD Secure Encrypted Virtualization support found on a host. */
export interface SevCapabilities {
  /** Plain SEV usable (libvirt reports it and kvm_amd `sev` is enabled). */
  sev: boolean;
  /** SEV-ES usable (encrypted register state). */
  sevEs: boolean;
  /** SEV-SNP usable (secure nested paging). */
  sevSnp: boolean;
  /** C-bit position in page table entries, from libvirt's domain capabilities. */
  cbitpos?: number;
  /** Physical address bits lost when SEV is on. */
  reducedPhysBits?: number;
  /** How many SEV guests the host can run at once (ASIDs); 0 when unknown. */
  maxGuests: number;
  /** How many SEV-ES guests the host can run at once; 0 when unknown. */
  maxEsGuests: number;
}

/** What a driver found on its host. */
export interface HostCapabilities {
  /** Name of the driver that probed. */
  driver: string;
  arch: Arch;
  /** Hardware virtualization (KVM) is present and usable. */
  kvmUsable: boolean;
  /** Software emulation (TCG) is available. */
  emulationAvailable: boolean;
  /** Guest CPU models the host can run (`host-model` expansions excluded). */
  cpuModels: string[];
  /** Host CPU feature names (libvirt spelling). */
  cpuFeatures: string[];
  /** Highest vCPU count one domain may have. */
  maxVcpus: number;
  /** Host memory in bytes. */
  memoryBytes: number;
  /** Supported hugepage sizes in KiB (e.g. 2048, 1048576). */
  hugepageSizesKiB: number[];
  /** Confidential computing support; absent when the driver cannot tell. */
  sev?: SevCapabilities;
  /** Machine types the emulator accepts (e.g. `q35`, `pc-q35-7.2`). */
  machineTypes: string[];
  /**
   * Backends of user-mode interfaces the hypervisor reports (libvirt's domain capabilities:
   * `default`, `passt`); absent when it does not say.
   */
  interfaceBackends?: string[];
}

/** libvirt's domain states, in libvirt's words. */
export type DomainState =
  | 'nostate'
  | 'running'
  | 'blocked'
  | 'paused'
  | 'shutdown'
  | 'shutoff'
  | 'crashed'
  | 'pmsuspended';

/** One domain as a driver reports it. */
export interface DomainInfo {
  /** Domain name: `<namespace>_<name>` of its VMI (as upstream). */
  name: string;
  /** Domain UUID (the VMI's UID when it had one). */
  uuid: string;
  state: DomainState;
  /** Why it is in that state (e.g. `user`, `destroyed`, `booted`), lowercased. */
  reason: string;
  /** Namespace and name of the VMI it runs, from the domain's metadata. */
  vmi?: DomainRef;
  vcpus: number;
  memoryKiB: number;
  /** Changes each time the domain is (re)started; survives a driver restart. */
  bootId: string;
}

/** Resource use of one domain. */
export interface DomainStats {
  name: string;
  /** Cumulative CPU time in nanoseconds. */
  cpuTimeNs: number;
  /** Memory currently given to the guest, KiB. */
  memoryKiB: number;
  vcpus: number;
  /**
   * libvirt's bulk statistics of the domain (virConnectGetAllDomainStats, `virsh
   * domstats` keys such as `vcpu.0.time`, `balloon.rss`, `block.0.rd.bytes`), values as
   * libvirt gives them (ns, KiB, bytes). Absent when the driver has none.
   */
  params?: Record<string, number | string | boolean>;
}

/** Identifies a domain by its VMI. */
export interface DomainRef {
  namespace: string;
  name: string;
}

/** A typed domain event. `domain` is the domain name. */
export type DomainEvent =
  | { type: 'defined'; domain: string; updated: boolean }
  | { type: 'undefined'; domain: string }
  | { type: 'started'; domain: string; reason: string }
  | { type: 'paused'; domain: string; reason: string }
  | { type: 'resumed'; domain: string; reason: string }
  | { type: 'shutdown'; domain: string; reason: string }
  | { type: 'stopped'; domain: string; reason: string }
  | { type: 'crashed'; domain: string; reason: string }
  | { type: 'rebooted'; domain: string }
  | { type: 'pmsuspended'; domain: string; reason: string }
  /** The guest agent's channel connected or disconnected (drivers with a `guestAgent`). */
  | { type: 'agent'; domain: string; connected: boolean };

/** The event type names. */
export type DomainEventType = DomainEvent['type'];

/** How `sync` should treat a VMI. */
export interface SyncOptions {
  /**
   * Allow software emulation (domain type `qemu`) when KVM is unusable. Mirrors
   * `spec.configuration.developerConfiguration.useEmulation` of the KubeVirt CR.
   */
  useEmulation?: boolean;
  /** Define the domain but do not start it. */
  paused?: boolean;
  /** Driver- or plugin-specific values (e.g. converter context overrides). */
  extra?: Record<string, unknown>;
  /**
   * Hotpluggable volumes whose disk is in place (the node agent mounted it into the
   * launcher's hotplug directory); the others are left out of the domain. Default: none.
   */
  hotplugReady?: ReadonlySet<string>;
}

/** Where a guest's serial console can be reached. */
export interface ConsoleEndpoint {
  kind: 'unix' | 'pty' | 'memory';
  /** Unix socket or pty path; absent for `memory`. */
  path?: string;
}

/** Where a guest's graphical console can be reached. */
export interface VncEndpoint {
  kind: 'unix' | 'tcp';
  /** Unix socket path for `unix`. */
  path?: string;
  host?: string;
  port?: number;
}

/** Options of a graceful shutdown. */
export interface ShutdownOptions {
  /** Seconds to wait for the guest to power off before killing it; 0 kills at once. */
  graceSeconds: number;
}

/** How a soft reboot asks the guest (upstream: the agent when connected, else ACPI). */
export interface SoftRebootOptions {
  via: 'agent' | 'acpi';
}

/**
 * A hypervisor backend. Every method that names a domain takes the VMI's namespace and
 * name. Methods reject with a `DriverError` whose `code` says what went wrong.
 */
export interface HypervisorDriver {
  /** Stable driver name (`libvirt`, `fake`, ...). */
  readonly name: string;
  /** Probes the host. */
  probe(): Promise<HostCapabilities>;
  /**
   * Makes the host run `vmi`: defines and starts its domain when absent or stopped,
   * does nothing when it already runs (idempotent; never restarts a running guest).
   */
  sync(vmi: VirtualMachineInstance, options?: SyncOptions): Promise<DomainInfo>;
  pause(ref: DomainRef): Promise<void>;
  unpause(ref: DomainRef): Promise<void>;
  /** Asks the guest to power off; kills it when `graceSeconds` pass. */
  shutdown(ref: DomainRef, options: ShutdownOptions): Promise<void>;
  /** Stops the domain at once. */
  kill(ref: DomainRef): Promise<void>;
  /** Hard reset (like pressing the reset button). */
  reset(ref: DomainRef): Promise<void>;
  /** Asks the guest to reboot itself: through its agent, or by ACPI (the default). */
  softReboot(ref: DomainRef, options?: SoftRebootOptions): Promise<void>;
  /** Stops (if needed) and forgets the domain. Deleting an absent domain succeeds. */
  delete(ref: DomainRef): Promise<void>;
  /** The domain, or undefined when the host has none for this VMI. */
  getDomain(ref: DomainRef): Promise<DomainInfo | undefined>;
  /** Every domain this driver manages on the host (those it or a predecessor defined). */
  listDomains(): Promise<DomainInfo[]>;
  getStats(ref: DomainRef): Promise<DomainStats>;
  /**
   * Domain events from now on, for domains this driver manages. Each call is a new
   * subscription; leaving the `for await` loop ends it.
   */
  events(): AsyncIterable<DomainEvent>;
  consoleEndpoint(ref: DomainRef): Promise<ConsoleEndpoint>;
  vncEndpoint(ref: DomainRef): Promise<VncEndpoint>;
  /** Extra launcher memory, in bytes, this driver needs per VMI beyond the guest's RAM. */
  memoryOverhead(vmi: VirtualMachineInstance): number;
  /** Present when the driver can live-migrate. */
  readonly migration?: MigrationSupport;
  /** Present when the driver can read a guest agent (guest OS, interfaces, users, filesystems). */
  readonly guestAgent?: GuestAgentSupport;
  /** Present when the driver can run the SEV attestation flow. */
  readonly sev?: SevSupport;
  /** Present when the driver can freeze and thaw guest filesystems (through the guest agent). */
  readonly fsFreeze?: FsFreezeSupport;
  /** Present when the driver can attach and detach disks of a running guest (volume hotplug). */
  readonly hotplug?: DiskHotplugSupport;
  /** Present when the driver can plug and unplug NICs of a running guest (NIC hotplug). */
  readonly nicHotplug?: NicHotplugSupport;
  /** Present when the driver can dump a running guest's memory to a file. */
  readonly memoryDump?: MemoryDumpSupport;
  /** Present when the driver can change a running guest's vCPU count (CPU hotplug). */
  readonly cpuHotplug?: CpuHotplugSupport;
  /** Present when the driver can change a running guest's memory (virtio-mem hotplug). */
  readonly memoryHotplug?: MemoryHotplugSupport;
  /** The guest display's current picture; absent when the driver cannot capture it. */
  screenshot?(ref: DomainRef): Promise<Screenshot>;
  /** Releases connections; running domains keep running. */
  close(): Promise<void>;
}

/** The domain name of a VMI: `<namespace>_<name>`, as upstream KubeVirt names it. */
export function domainName(ref: DomainRef): string {
  return `${ref.namespace}_${ref.name}`;
}

/** The `DomainRef` of a VMI, rejecting one without a name. */
export function refOf(vmi: VirtualMachineInstance): DomainRef {
  const name = vmi.metadata?.name;
  if (!name) throw new TypeError('VirtualMachineInstance: metadata.name is required');
  return { namespace: vmi.metadata?.namespace || 'default', name };
}
