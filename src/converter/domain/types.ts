/**
 * A typed model of the libvirt domain XML that the converter emits and the launcher reads
 * back (see https://libvirt.org/formatdomain.html). Property names are the XML names:
 * attributes and child elements are both plain properties (the table in `schema.ts` says
 * which is which), `value` holds the text of an element that also has attributes, an element with only text is a plain string or number, and a present-but-empty element such
 * as `<acpi/>` is `{}`. Repeated elements are arrays.
 *
 * The parts: ./basic-types (switches, addresses), ./platform-types (memory, OS, CPU,
 * features, clock), ./device-types (`<devices>`); this module is the root and re-exports them.
 */
import type { SizedValue } from './basic-types';
import type { Devices } from './device-types';
import type {
  Clock,
  CPU,
  CPUTune,
  Features,
  LaunchSecurity,
  MemoryBacking,
  NUMATune,
  OS,
  SysInfo,
  VCPU,
  VCPUs,
} from './platform-types';

export type * from './basic-types';
export type * from './device-types';
export type * from './platform-types';

/** `<kubevirt xmlns="http://kubevirt.io">` in `<metadata>`: the VMI's UID and termination grace period. */
export interface KubeVirtMetadata {
  xmlns: string;
  uid?: string;
  graceperiod?: { deletionGracePeriodSeconds?: number; deletionTimestamp?: string };
}

/** `<metadata>`: application data libvirt keeps with the domain; here KubeVirt's element. */
export interface Metadata {
  kubevirt?: KubeVirtMetadata;
}

/** libvirt's QEMU XML namespace, for `qemu:commandline`. */
export const QEMU_NAMESPACE = 'http://libvirt.org/schemas/domain/qemu/1.0';

/** `<qemu:commandline>`: arguments libvirt appends to QEMU's command line, in order. */
export interface QemuCommandline {
  'qemu:arg': { value: string }[];
}

/** The root `<domain>` element. */
export interface Domain {
  type: 'kvm' | 'qemu';
  /** {@link QEMU_NAMESPACE} when `qemu:commandline` is used. */
  'xmlns:qemu'?: string;
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
  'qemu:commandline'?: QemuCommandline;
}
