/**
 * Plugin hooks. A plugin adds one feature across the stack: it may adjust the
 * converted domain before the driver defines it, contribute node labels, device
 * resources and memory overhead from host capabilities, add admission rules, and add
 * launcher operations (extra RPCs the launcher serves for it).
 */
import type { VirtualMachineInstance } from '../api';
import type { Domain } from '../converter/domain';
import type { DomainRef, HostCapabilities, HypervisorDriver, SyncOptions } from './driver';

/** What a plugin sees when it adjusts a domain. */
export interface DomainMutationContext {
  /** Capabilities of the host the domain will run on. */
  capabilities: HostCapabilities;
  options: SyncOptions;
  /** Name of the driver that will run the domain. */
  driver: string;
}

/** One admission finding: the field path and what is wrong with it. */
export interface AdmissionCause {
  /** Field path, e.g. `spec.domain.launchSecurity.sev`. */
  field: string;
  message: string;
}

/** Validates a VMI; returns nothing when it is acceptable. */
export type AdmissionRule = (vmi: VirtualMachineInstance) => AdmissionCause[];

/** What a launcher operation receives. */
export interface LauncherOperationContext {
  driver: HypervisorDriver;
  ref: DomainRef;
}

/** An extra launcher RPC: JSON-like input and output. */
export type LauncherOperation = (
  input: Record<string, unknown>,
  context: LauncherOperationContext,
) => Promise<Record<string, unknown>>;

/** A feature plugin. Every hook is optional. */
export interface HypervisorPlugin {
  /** Unique plugin name. */
  readonly name: string;
  /** Whether this plugin concerns `vmi`; hooks taking a VMI only run when it does. */
  appliesTo?(vmi: VirtualMachineInstance): boolean;
  /** Adjusts the converted domain in place; throw a `DriverError` to refuse the VMI. */
  mutateDomain?(domain: Domain, vmi: VirtualMachineInstance, context: DomainMutationContext): void;
  /** Node labels to set from the host's capabilities. */
  nodeLabels?(capabilities: HostCapabilities): Record<string, string>;
  /** Device resources (node capacity) from the host's capabilities. */
  deviceResources?(capabilities: HostCapabilities): Record<string, number>;
  /** Extra launcher memory for `vmi`, bytes. */
  memoryOverhead?(vmi: VirtualMachineInstance): number;
  /** Admission rules for VMIs this plugin applies to. */
  admissionRules?: readonly AdmissionRule[];
  /** Launcher operations by name. */
  launcherOperations?: Readonly<Record<string, LauncherOperation>>;
}

function applies(plugin: HypervisorPlugin, vmi: VirtualMachineInstance): boolean {
  return plugin.appliesTo ? plugin.appliesTo(vmi) : true;
}

/** The plugins among `plugins` that apply to `vmi`, in order. */
export function pluginsFor(
  plugins: readonly HypervisorPlugin[],
  vmi: VirtualMachineInstance,
): HypervisorPlugin[] {
  return plugins.filter((p) => applies(p, vmi));
}

/** Runs every applicable plugin's `mutateDomain` on `domain`, in order. */
export function applyDomainMutations(
  plugins: readonly HypervisorPlugin[],
  domain: Domain,
  vmi: VirtualMachineInstance,
  context: DomainMutationContext,
): Domain {
  for (const p of pluginsFor(plugins, vmi)) p.mutateDomain?.(domain, vmi, context);
  return domain;
}

/** Node labels of all plugins merged; a later plugin setting the same key with another value is an error. */
export function collectNodeLabels(
  plugins: readonly HypervisorPlugin[],
  capabilities: HostCapabilities,
): Record<string, string> {
  const out: Record<string, string> = {};
  const owner: Record<string, string> = {};
  for (const p of plugins) {
    for (const [k, v] of Object.entries(p.nodeLabels?.(capabilities) ?? {})) {
      if (k in out && out[k] !== v) {
        throw new Error(`plugins ${owner[k]} and ${p.name} both set node label ${k} (${out[k]} vs ${v})`);
      }
      out[k] = v;
      owner[k] = p.name;
    }
  }
  return out;
}

/** Device resources of all plugins; counts for the same resource add up. */
export function collectDeviceResources(
  plugins: readonly HypervisorPlugin[],
  capabilities: HostCapabilities,
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of plugins) {
    for (const [k, v] of Object.entries(p.deviceResources?.(capabilities) ?? {})) {
      out[k] = (out[k] ?? 0) + v;
    }
  }
  return out;
}

/** Memory overhead of the applicable plugins, bytes. */
export function collectMemoryOverhead(
  plugins: readonly HypervisorPlugin[],
  vmi: VirtualMachineInstance,
): number {
  return pluginsFor(plugins, vmi).reduce((sum, p) => sum + (p.memoryOverhead?.(vmi) ?? 0), 0);
}

/** Runs the admission rules of the applicable plugins. */
export function admit(plugins: readonly HypervisorPlugin[], vmi: VirtualMachineInstance): AdmissionCause[] {
  return pluginsFor(plugins, vmi).flatMap((p) => (p.admissionRules ?? []).flatMap((rule) => rule(vmi)));
}

/** Launcher operations of all plugins by name; two plugins offering one name is an error. */
export function collectLauncherOperations(
  plugins: readonly HypervisorPlugin[],
): Map<string, { plugin: string; operation: LauncherOperation }> {
  const out = new Map<string, { plugin: string; operation: LauncherOperation }>();
  for (const p of plugins) {
    for (const [name, operation] of Object.entries(p.launcherOperations ?? {})) {
      const prev = out.get(name);
      if (prev) throw new Error(`plugins ${prev.plugin} and ${p.name} both offer launcher operation ${name}`);
      out.set(name, { plugin: p.name, operation });
    }
  }
  return out;
}
