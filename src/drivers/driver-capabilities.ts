/**
 * The optional parts of the `HypervisorDriver` contract (driver.ts): what a driver offers
 * beside the lifecycle when its hypervisor can (live migration, SEV attestation, guest
 * freeze, memory dumps, disk, NIC, CPU and memory hotplug), and the value types they
 * speak. A caller checks for each before use; the conformance suite tests those present.
 */
import type { VirtualMachineInstance } from '../api';
import type { DomainRef, SyncOptions } from './driver';

/** How a live migration runs (upstream's MigrationOptions, in driver terms). */
export interface MigrationOptions {
  /** Bandwidth limit in MiB/s; 0 or absent: unlimited. */
  bandwidthMiBps?: number;
  /** Let the hypervisor throttle the guest's vCPUs so a busy guest converges. */
  allowAutoConverge?: boolean;
  /** Allow switching to post-copy (the guest runs on the target before all memory moved). */
  allowPostCopy?: boolean;
  /** Migrate even where the hypervisor thinks it unsafe (e.g. disk cache modes). */
  unsafe?: boolean;
  /**
   * Where the migration data stream goes (libvirt's `migrate_uri`, e.g. `tcp://10.0.0.7`
   * or `unix:///run/proxy.sock`); default: the address the target daemon picks itself.
   */
  migrateUri?: string;
  /** Send memory over this many parallel connections (libvirt's PARALLEL flag); absent: one. */
  parallelConnections?: number;
  /**
   * Copy the guest's local disks along (a block migration: libvirt's NON_SHARED_INC and
   * `migrate_disks`): every file or block disk but CD-ROMs, read-only disks not
   * `generated` and `shared` ones (VMI volume names); the target has each disk's file
   * ready (a containerDisk's overlay on the same image).
   */
  blockMigration?: { shared: string[]; generated: string[] };
  /** Where the disks' stream goes (libvirt's `disks_uri`, e.g. `unix:///run/proxy-49153.sock`); default: the target daemon's NBD port. */
  disksUri?: string;
}

/** Progress of a running migration job. */
export interface MigrationProgress {
  /** Bytes to transfer in total (memory and disks), as far as known. */
  dataTotal: number;
  /** Bytes transferred so far. */
  dataProcessed: number;
  /** Bytes still to transfer. */
  dataRemaining: number;
  /** Milliseconds since the job started. */
  elapsedMs: number;
}

/** Live migration, for drivers that can do it. */
export interface MigrationSupport {
  /**
   * Prepares this (target) host for an incoming domain: renders the domain for this host
   * (its own socket, console and disk paths), creates what it needs, and returns that
   * domain XML as the cookie the source sends with the migration.
   */
  prepareTarget(vmi: VirtualMachineInstance, options: SyncOptions): Promise<string>;
  /**
   * Sends the running domain to `targetUri` using the target's cookie (an empty cookie
   * keeps the source's own definition). Resolves once the guest runs on the target and
   * the source domain is gone; rejects when the migration fails or is cancelled.
   */
  migrateSource(ref: DomainRef, targetUri: string, cookie: string, options?: MigrationOptions): Promise<void>;
  /** The running migration job's progress, or undefined when none runs. */
  progress(ref: DomainRef): Promise<MigrationProgress | undefined>;
  /** Aborts the running outgoing migration job (the guest keeps running on the source). */
  cancel(ref: DomainRef): Promise<void>;
  /**
   * Switches the running outgoing job to post-copy: the guest runs on the target from now
   * on and fetches the memory still here on demand. Only for a job started with
   * `allowPostCopy`.
   */
  startPostCopy(ref: DomainRef): Promise<void>;
  /** The most the guest may be paused at the running job's switch-over, ms. */
  setMaxDowntime(ref: DomainRef, ms: number): Promise<void>;
  /** Cleans up the target after a failed or aborted migration. */
  abortTarget(ref: DomainRef): Promise<void>;
}

/** AMD SEV platform data a guest owner needs to set up a session (upstream's SEVPlatformInfo). */
export interface SevPlatformInfo {
  /** Platform Diffie-Hellman key, base64. */
  pdh: string;
  /** Platform certificate chain, base64. */
  certChain: string;
  cpu0Id?: string;
  cbitpos?: number;
  reducedPhysBits?: number;
  maxGuests?: number;
  maxEsGuests?: number;
}

/** The launch measurement of an SEV guest (upstream's SEVMeasurementInfo). */
export interface SevMeasurementInfo {
  /** Base64 measurement of the launched memory. */
  measurement: string;
  apiMajor: number;
  apiMinor: number;
  buildId: number;
  policy: number;
  /** SHA-256 (hex) of the firmware image, when the driver can read it. */
  loaderSHA?: string;
}

/** The secret a guest owner injects after checking the measurement (upstream's SEVSecretOptions). */
export interface SevSecret {
  /** Base64 packet header. */
  header: string;
  /** Base64 encrypted secret. */
  secret: string;
  /** Guest physical address to write it to (default: where the firmware asks). */
  address?: bigint;
}

/** SEV attestation, for drivers that can run confidential guests. */
export interface SevSupport {
  /** The host's platform Diffie-Hellman key and certificate chain. */
  platformInfo(): Promise<SevPlatformInfo>;
  /** The launch measurement of a guest started paused for attestation. */
  launchMeasurement(ref: DomainRef): Promise<SevMeasurementInfo>;
  /** Injects the guest owner's secret into a paused guest before it is resumed. */
  injectLaunchSecret(ref: DomainRef, secret: SevSecret): Promise<void>;
}

/** A picture of a guest's display, as the hypervisor gives it (QEMU through libvirt: a PPM). */
export interface Screenshot {
  /** MIME type, e.g. `image/x-portable-pixmap` or `image/png`. */
  mime: string;
  data: Buffer;
}

/** Freezing a guest's filesystems (for a consistent snapshot), for drivers whose guest agent can. */
export interface FsFreezeSupport {
  /**
   * Flushes and freezes every freezable guest filesystem; resolves with how many were
   * frozen. Rejects with the agent's error (e.g. no agent, or already frozen).
   */
  freeze(ref: DomainRef): Promise<number>;
  /** Thaws the frozen filesystems; resolves with how many were thawed. */
  thaw(ref: DomainRef): Promise<number>;
  /** Whether the guest's filesystems are frozen, as its agent says. */
  status(ref: DomainRef): Promise<'frozen' | 'thawed'>;
}

/** Dumping a running guest's memory to a file (`virtctl memory-dump`), for drivers that can. */
export interface MemoryDumpSupport {
  /**
   * Writes a memory-only core dump of the running (or paused) guest to `path` (an ELF
   * core: libvirt's `virDomainCoreDumpWithFormat` with `VIR_DUMP_MEMORY_ONLY`, raw
   * format); resolves once the file is complete. The guest keeps running.
   */
  dump(ref: DomainRef, path: string): Promise<void>;
}

/**
 * Live volume hotplug: attaching and detaching the disks of a VMI's hotpluggable volumes
 * while its guest runs, for drivers that can.
 */
export interface DiskHotplugSupport {
  /**
   * Brings the running domain's hotplugged disks in line with `vmi`: attaches the disk of
   * each hotpluggable volume in `options.hotplugReady` the domain lacks, and detaches each
   * hotplugged disk whose volume left the spec, waiting (up to `timeoutMs`, default 60 s)
   * for the guest to let it go. Resolves with the hotplugged volumes the domain has now.
   */
  syncDisks(vmi: VirtualMachineInstance, options: SyncOptions, timeoutMs?: number): Promise<string[]>;
  /** Hot-plugs one device given as the driver's device XML (libvirt: `<disk>...</disk>`). */
  attachDevice(ref: DomainRef, xml: string): Promise<void>;
  /** Unplugs one device given as XML and waits (up to `timeoutMs`) until the guest released it. */
  detachDevice(ref: DomainRef, xml: string, timeoutMs?: number): Promise<void>;
}

/**
 * Live NIC hotplug (upstream's launcher hotplugVirtioInterface / hotUnplugVirtioInterface):
 * the interfaces of a running guest on secondary networks, for drivers that can.
 */
export interface NicHotplugSupport {
  /**
   * Brings the running domain's NICs in line with `vmi`: attaches the interface of each
   * VMI interface named in `ready` (its pod side is set up) that is not `absent` and that
   * the domain lacks, and detaches each interface whose VMI interface is `absent`, waiting
   * (up to `timeoutMs`, default 60 s) for the guest to let it go. Resolves with the names of
   * the VMI interfaces the domain has now.
   */
  syncInterfaces(
    vmi: VirtualMachineInstance,
    ready: ReadonlySet<string>,
    options: SyncOptions,
    timeoutMs?: number,
  ): Promise<string[]>;
}

/**
 * Live CPU hotplug (upstream's launcher UpdateVCPUs: virDomainSetVcpusFlags, live and
 * config), for drivers whose domains can enable more of their hotpluggable vCPUs.
 */
export interface CpuHotplugSupport {
  /** Enables `count` vCPUs of the running domain (at most its maximum), live and in its definition. */
  setVcpus(ref: DomainRef, count: number): Promise<void>;
}

/**
 * Live memory hotplug (upstream's launcher UpdateGuestMemory): the virtio-mem device of a
 * running guest, for drivers that can.
 */
export interface MemoryHotplugSupport {
  /**
   * Gives the running domain the guest memory `vmi` asks for above what it booted with:
   * updates the requested size of its virtio-mem device (live), or attaches the device
   * (live and config) the first time.
   */
  syncGuestMemory(vmi: VirtualMachineInstance): Promise<void>;
}
