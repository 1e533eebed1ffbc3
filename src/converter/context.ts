/**
 * `ConverterContext`: everything the host decides about a conversion, handed to the pure
 * converter so the same VMI and context always yield the same domain. The launcher (or a
 * driver) fills it from its probes; tests and the CLI use `defaultConverterContext`.
 */

/** Where the launcher keeps the files and sockets a domain refers to (upstream's layout by default). */
export interface ConverterPaths {
  /** Per-VMI private state: serial/VNC/USB-redirection sockets live in `<privateDir>/<vmi uid>/`. */
  privateDir: string;
  /** Container disk images (backing files), `disk_<n>.img` by volume order. */
  containerDiskDir: string;
  /** Writable overlays of containerDisk and ephemeral volumes: `<dir>/<volume>/disk.qcow2`. */
  ephemeralDiskDir: string;
  /** emptyDisk images: `<dir>/<volume>.qcow2`. */
  emptyDiskDir: string;
  /** Filesystem PVCs and DataVolumes: `<dir>/<volume>/disk.img`. */
  pvcDiskDir: string;
  /** Block PVCs and DataVolumes: `<dir>/<volume>`. */
  blockDeviceDir: string;
  /**
   * Hotplugged PVCs and DataVolumes: `<dir>/<volume>.img` (filesystem) or `<dir>/<volume>`
   * (block); upstream's `/var/run/kubevirt/hotplug-disks` when unset.
   */
  hotplugDiskDir?: string;
  /** cloud-init ISOs: `<dir>/<namespace>/<name>/noCloud.iso` or `configdrive.iso`. */
  cloudInitDir: string;
  /** configMap, secret, serviceAccount, downwardAPI, sysprep ISOs: `<dir>/<kind>/<volume>.iso`. */
  configDiskDir: string;
  /** Mounted secret volumes: `<dir>/<volume>/<key>` (ACPI tables come from here). */
  secretSourceDir: string;
  /** Kernel boot artifacts extracted from the kernelBoot container. */
  kernelBootDir: string;
  /** virtiofsd sockets: `<dir>/<filesystem>.sock`. */
  virtiofsDir: string;
  /** libvirt runtime directory (guest agent channel, NVRAM copies). */
  libvirtRunDir: string;
  /** Persistent EFI NVRAM and TPM state. */
  persistentStateDir: string;
}

/** OVMF images, as Debian's `ovmf` package installs them. */
export interface FirmwarePaths {
  efiCode: string;
  efiVars: string;
  efiCodeSecureBoot: string;
  efiVarsSecureBoot: string;
  /** Firmware for SEV guests (no SMM); defaults to `efiCode`. */
  efiCodeSEV?: string;
  /**
   * Stateless firmware for SEV-SNP guests, upstream's `OVMF.amdsev.fd` (edk2's
   * OvmfPkg/AmdSev build); defaults to `efiCodeSEV`, then `efiCode`.
   */
  efiCodeSNP?: string;
}

/** A host device resolved by the device plugin / DRA driver for one VMI device name. */
export type ResolvedHostDevice =
  | { type: 'pci'; address: string }
  | { type: 'mdev'; uuid: string }
  | { type: 'usb'; vendor: string; product: string; bus?: string; device?: string };

/** SEV parameters of the host CPU (`virsh domcapabilities`). */
export interface SEVHost {
  cbitpos: number;
  reducedPhysBits: number;
  /** Whether the platform supports SEV-ES and SEV-SNP. */
  es: boolean;
  snp: boolean;
}

/** Host decisions for one conversion. */
export interface ConverterContext {
  /** libvirt architecture name of the host (`x86_64`, `aarch64`, `s390x`, `ppc64le`). */
  arch: string;
  /** `/dev/kvm` works: domain type `kvm`. */
  kvmAvailable: boolean;
  /** The cluster allows software emulation (`developerConfiguration.useEmulation`): type `qemu`. */
  allowEmulation: boolean;
  /** Emulator binary to pin, if any (libvirt picks one otherwise). */
  emulator?: string;
  paths: ConverterPaths;
  firmware: FirmwarePaths;
  /** SMBIOS system values (upstream's `smbios` cluster config). */
  smbios: { manufacturer?: string; product?: string; version?: string; sku?: string; family?: string };
  /** Present when the host supports SEV. */
  sev?: SEVHost;
  /** Host devices per VMI device name: SR-IOV interfaces, GPUs and host devices. */
  hostDevices: Record<string, ResolvedHostDevice>;
  /** Host CPUs pinned to this VMI (dedicated CPU placement), in vCPU order; one extra for the emulator thread. */
  cpuSet?: number[];
  /** Host NUMA node of each host CPU in `cpuSet` (NUMA passthrough); missing CPUs count as node 0. */
  cpuNUMANodes?: Record<number, number>;
  /** Volumes backed by a block device rather than a file. */
  blockVolumes: ReadonlySet<string>;
  /**
   * Hotpluggable PVC/DataVolume volumes whose disk the node agent has put in the launcher's
   * hotplug directory (`paths.hotplugDiskDir`). The disks of other hotpluggable volumes are
   * left out of the domain (they are attached live once ready). Default: none.
   */
  hotplugReadyVolumes?: ReadonlySet<string>;
  /** Image format of each containerDisk/ephemeral backing file, by volume name (default `raw`). */
  backingFormats: Record<string, 'raw' | 'qcow2'>;
  /** Block sizes the launcher probed per volume, for disks with `blockSize.matchVolume`. */
  volumeBlockSizes: Record<string, { logical: number; physical: number }>;
  /** Whether the disk files' filesystems support O_DIRECT (cache `none`); default true. */
  directIO: boolean;
  /** Volumes whose discard requests must be ignored (thick-provisioned storage). */
  volumesDiscardIgnore: ReadonlySet<string>;
  /** Interface MAC addresses chosen by the network setup, by interface name. */
  interfaceMACs: Record<string, string>;
  /** Memory balloon statistics period in seconds (0 disables). */
  memBalloonStatsPeriod: number;
  /** Free page reporting on the balloon (upstream: on unless dedicated CPUs or hugepages). */
  freePageReporting: boolean;
  /**
   * The cluster turned serial console logging off (`virtualMachineOptions.disableSerialConsoleLog`):
   * only VMIs that set `logSerialConsole: true` get the log then.
   */
  serialConsoleLogDisabled: boolean;
  /** VSOCK context id allocated by the controller (falls back to `status.VSOCKCID`). */
  vsockCID?: number;
  /**
   * Use the bochs display for EFI guests on x86 (upstream's BochsDisplayForEFIGuests, GA
   * since v1.4, so the default), else vga: upstream's clusters opt out with the
   * `kubevirt.io/vga-display-efi-x86` annotation on the KubeVirt CR.
   */
  useBochsForEFIGuests: boolean;
  /** Default machine type when the VMI names none (cluster config). */
  defaultMachineType: string;
  /**
   * How a passtBinding interface reaches passt: `libvirt` renders libvirt's
   * `<interface type="user"><backend type="passt"/>` (libvirt starts passt), `qemu` attaches
   * QEMU to the socket of a passt the launcher started (`<qemu:commandline>`), for a libvirt
   * whose domain capabilities do not list the passt backend (Debian 12's 9.0.0).
   */
  passtBackend: 'libvirt' | 'qemu';
}

/** Upstream KubeVirt's launcher file layout. */
export const upstreamPaths: Readonly<ConverterPaths> = Object.freeze({
  privateDir: '/var/run/kubevirt-private',
  containerDiskDir: '/var/run/kubevirt/container-disks',
  ephemeralDiskDir: '/var/run/kubevirt-ephemeral-disks/disk-data',
  emptyDiskDir: '/var/run/libvirt/empty-disks',
  pvcDiskDir: '/var/run/kubevirt-private/vmi-disks',
  blockDeviceDir: '/dev',
  cloudInitDir: '/var/run/kubevirt-ephemeral-disks/cloud-init-data',
  configDiskDir: '/var/run/kubevirt-private',
  secretSourceDir: '/var/run/kubevirt-private/secret',
  kernelBootDir: '/var/run/kubevirt-ephemeral-disks/kernel-boot',
  virtiofsDir: '/var/run/kubevirt/virtiofs-containers',
  libvirtRunDir: '/var/run/kubevirt-private/libvirt',
  persistentStateDir: '/var/lib/libvirt',
});

/** Debian 12's OVMF 4M images (package `ovmf`), and upstream's SEV-SNP image name. */
export const debianOVMF: Readonly<FirmwarePaths> = Object.freeze({
  efiCode: '/usr/share/OVMF/OVMF_CODE_4M.fd',
  efiVars: '/usr/share/OVMF/OVMF_VARS_4M.fd',
  efiCodeSecureBoot: '/usr/share/OVMF/OVMF_CODE_4M.secboot.fd',
  efiVarsSecureBoot: '/usr/share/OVMF/OVMF_VARS_4M.ms.fd',
  // Debian 12's ovmf has no AMD SEV build: this file must be installed by hand
  // (docs/converter.md), at upstream's name in the same directory.
  efiCodeSNP: '/usr/share/OVMF/OVMF.amdsev.fd',
});

/** A context for an x86_64 KVM host with upstream's paths; override what the host differs in. */
export function defaultConverterContext(overrides: Partial<ConverterContext> = {}): ConverterContext {
  return {
    arch: 'x86_64',
    kvmAvailable: true,
    allowEmulation: false,
    paths: upstreamPaths,
    firmware: debianOVMF,
    smbios: { manufacturer: 'KubeVirt', product: 'None', family: 'KubeVirt' },
    hostDevices: {},
    blockVolumes: new Set(),
    backingFormats: {},
    volumeBlockSizes: {},
    directIO: true,
    volumesDiscardIgnore: new Set(),
    interfaceMACs: {},
    memBalloonStatsPeriod: 10,
    freePageReporting: true,
    serialConsoleLogDisabled: false,
    useBochsForEFIGuests: true,
    defaultMachineType: 'q35',
    passtBackend: 'libvirt',
    ...overrides,
  };
}
