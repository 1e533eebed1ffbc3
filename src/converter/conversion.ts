/**
 * The state one conversion threads through the configurators: the VMI, the host context,
 * the domain under construction, and the few facts several configurators share (vCPU
 * count, confidential-computing mode, virtio model), computed once.
 */
import type { VirtualMachineInstance, VirtualMachineInstanceSpec } from '../api/generated/types';
import type { ConverterContext } from './context';
import type { Domain } from './domain/types';
import { ConversionError } from './errors';
import { absolutePathProblem, pathSegmentProblem, singleLineProblem } from './strings';

/** Confidential-computing mode requested by `spec.domain.launchSecurity`. */
export type LaunchSecurityMode = 'sev' | 'sev-es' | 'sev-snp' | undefined;

/** One conversion in progress. */
export class Conversion {
  readonly spec: VirtualMachineInstanceSpec;
  readonly name: string;
  readonly namespace: string;
  /** The libvirt domain name, `<namespace>_<name>`. */
  readonly domainName: string;
  readonly launchSecurity: LaunchSecurityMode;
  /** Guest vCPUs: sockets * cores * threads (defaults 1). */
  readonly vcpus: number;

  constructor(
    readonly vmi: VirtualMachineInstance,
    readonly ctx: ConverterContext,
    readonly domain: Domain,
  ) {
    const name = vmi.metadata?.name;
    if (!name) throw new ConversionError('', 'metadata.name', 'is required');
    this.name = name;
    this.namespace = vmi.metadata?.namespace || 'default';
    if (!vmi.spec?.domain) throw new ConversionError(name, 'spec.domain', 'is required');
    this.spec = vmi.spec;
    this.segment(this.name, 'metadata.name');
    this.segment(this.namespace, 'metadata.namespace');
    this.domainName = `${this.namespace}_${this.name}`;
    const ls = this.spec.domain.launchSecurity;
    this.launchSecurity = ls?.snp
      ? 'sev-snp'
      : ls?.sev
        ? ls.sev.policy?.encryptedState
          ? 'sev-es'
          : 'sev'
        : undefined;
    const cpu = this.spec.domain.cpu;
    this.vcpus = (cpu?.sockets || 1) * (cpu?.cores || 1) * (cpu?.threads || 1);
  }

  /** Throws a field-path error for this VMI. */
  fail(path: string, reason: string): never {
    throw new ConversionError(this.name, path, reason);
  }

  /** Returns `value` if it is a safe single line, else fails with `path`. */
  line(value: string, path: string): string {
    const problem = singleLineProblem(value);
    if (problem) this.fail(path, problem);
    return value;
  }

  /** Returns `value` if it can be one path segment (it becomes part of file names), else fails. */
  segment(value: string, path: string): string {
    const problem = pathSegmentProblem(value);
    if (problem) this.fail(path, problem);
    return value;
  }

  /** Returns `value` if it is a clean absolute path, else fails. */
  absolutePath(value: string, path: string): string {
    const problem = absolutePathProblem(value);
    if (problem) this.fail(path, problem);
    return value;
  }

  /** The virtio device model: non-transitional unless the VMI asks for transitional devices. */
  virtioModel(): 'virtio-non-transitional' | 'virtio-transitional' {
    return this.spec.domain.devices.useVirtioTransitional ? 'virtio-transitional' : 'virtio-non-transitional';
  }

  /** Whether virtio devices need `iommu="on"` (SEV guests' memory is encrypted). */
  get iommu(): boolean {
    return this.launchSecurity !== undefined;
  }

  /** The per-VMI private directory holding console, VNC and redirection sockets. */
  get privateDir(): string {
    return `${this.ctx.paths.privateDir}/${this.uid}`;
  }

  /** The VMI UID, or its namespace/name when it has none yet (CLI, tests). */
  get uid(): string {
    const uid = this.vmi.metadata?.uid;
    return uid ? this.segment(uid, 'metadata.uid') : `${this.namespace}_${this.name}`;
  }
}

/** One concern of the conversion (upstream's "configurator"). */
export interface Configurator {
  /** Short name, used in docs and test titles. */
  readonly name: string;
  configure(c: Conversion): void;
}

/** `ua-<name>`: KubeVirt's alias for a device the user named. */
export function userAlias(name: string): { name: string } {
  return { name: `ua-${name}` };
}
