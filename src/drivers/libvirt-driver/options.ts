/** Options of the libvirt driver. */
import type { VirtualMachineInstance } from '../../api';
import type { ConverterContext, Domain } from '../../converter';
import type { HypervisorPlugin } from '../plugin';

/** Turns a VMI into a domain model: the converter, or a replacement. */
export type DomainRenderer = (vmi: VirtualMachineInstance, context: ConverterContext) => Domain;

/** Options of `LibvirtDriver.connect`. */
export interface LibvirtDriverOptions {
  /** Driver name reported by `name` and `probe()` (default `libvirt`). */
  name?: string;
  /** Connection URI (default `qemu:///system`). `test:///default` runs libvirt's test driver. */
  uri?: string;
  /** The daemon's socket: the system daemon by default; a per-VM daemon's socket otherwise. */
  socketPath?: string;
  /** Whether KVM may be used where the host offers it (default true); false always emulates. */
  allowKvm?: boolean;
  /** Plugins whose `mutateDomain` runs on every converted domain, in order. */
  plugins?: readonly HypervisorPlugin[];
  /** VMI -> domain (default: the converter's `convertVMI`). */
  render?: DomainRenderer;
  /** Converter context fields that override what the probe found (paths, firmware, ...). */
  converterContext?: Partial<ConverterContext>;
  /** Root of sysfs for kvm_amd parameters (default `/sys`). */
  sysfsRoot?: string;
  /** How often to look at a domain during a graceful shutdown, ms (default 100). */
  shutdownPollMs?: number;
  /**
   * The account QEMU runs as, which must own the directories of its sockets: a
   * session-mode daemon's user (a launcher's own daemon). Default: the system daemon's
   * `libvirt-qemu` when we are root.
   */
  qemuUser?: { uid: number; gid: number };
}
