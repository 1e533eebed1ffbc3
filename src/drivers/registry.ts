/**
 * The driver registry: which drivers and plugins exist, which driver runs a VMI
 * (configuration first, then capabilities), which plugins apply, and their merged
 * contributions. `createDriverContainer` composes it all with inversify, using
 * `toDynamicValue`/`toResolvedValue` bindings only, so users need no decorators.
 */
import { Container } from 'inversify';
import type { VirtualMachineInstance } from '../api';
import type { HostCapabilities, HypervisorDriver } from './driver';
import { DriverError } from './errors';
import {
  type AdmissionCause,
  admit,
  collectDeviceResources,
  collectLauncherOperations,
  collectMemoryOverhead,
  collectNodeLabels,
  type HypervisorPlugin,
  type LauncherOperation,
  pluginsFor,
} from './plugin';

/** VMI annotation naming the driver that must run it. */
export const DRIVER_ANNOTATION = 'kubevirt-ts.io/hypervisor-driver';

/** How drivers and plugins are chosen. */
export interface DriverConfig {
  /** Driver to use unless a VMI names another; when absent the first that supports the VMI wins. */
  driver?: string;
  /** `developerConfiguration.useEmulation`: allow software emulation without KVM. */
  useEmulation?: boolean;
  /** Plugins to enable, by name (default: every registered plugin). */
  plugins?: string[];
  /** Per-driver settings by driver name (e.g. `{ libvirt: { uri: 'qemu:///system' } }`). */
  settings?: Record<string, Record<string, unknown>>;
}

/** What a factory gets to build its driver. */
export interface DriverFactoryContext {
  config: DriverConfig;
  /** `config.settings[name]`, or `{}`. */
  settings: Record<string, unknown>;
  /** The enabled plugins, for drivers that apply `mutateDomain`. */
  plugins: readonly HypervisorPlugin[];
}

/** Registers a driver: how to build it and what it can run. */
export interface DriverFactory {
  readonly name: string;
  create(context: DriverFactoryContext): HypervisorDriver | Promise<HypervisorDriver>;
  /** `true` when the driver can run `vmi` on a host with `capabilities`, else the reason it cannot. */
  supports?(vmi: VirtualMachineInstance, capabilities: HostCapabilities, config: DriverConfig): true | string;
}

/** Drivers and plugins known to one process. */
export class DriverRegistry {
  private readonly factories = new Map<string, DriverFactory>();
  private readonly allPlugins: HypervisorPlugin[] = [];

  constructor(
    factories: readonly DriverFactory[] = [],
    plugins: readonly HypervisorPlugin[] = [],
    readonly config: DriverConfig = {},
  ) {
    for (const f of factories) this.registerDriver(f);
    for (const p of plugins) this.registerPlugin(p);
  }

  registerDriver(factory: DriverFactory): void {
    if (this.factories.has(factory.name)) throw new Error(`driver ${factory.name} is already registered`);
    this.factories.set(factory.name, factory);
  }

  registerPlugin(plugin: HypervisorPlugin): void {
    if (this.allPlugins.some((p) => p.name === plugin.name)) {
      throw new Error(`plugin ${plugin.name} is already registered`);
    }
    this.allPlugins.push(plugin);
  }

  /** Registered driver names, in registration order. */
  driverNames(): string[] {
    return [...this.factories.keys()];
  }

  /** The enabled plugins (all, or those `config.plugins` names). */
  plugins(): HypervisorPlugin[] {
    const wanted = this.config.plugins;
    if (!wanted) return [...this.allPlugins];
    for (const name of wanted) {
      if (!this.allPlugins.some((p) => p.name === name)) {
        throw new Error(
          `driver configuration: plugins names ${name}, which is not registered (known: ${this.allPlugins.map((p) => p.name).join(', ') || 'none'})`,
        );
      }
    }
    return this.allPlugins.filter((p) => wanted.includes(p.name));
  }

  factory(name: string): DriverFactory {
    const f = this.factories.get(name);
    if (!f) {
      throw new DriverError(
        'Unsupported',
        `no hypervisor driver named ${name} is registered (known: ${this.driverNames().join(', ') || 'none'})`,
      );
    }
    return f;
  }

  /**
   * The factory that must run `vmi` on a host with `capabilities`: the one its
   * annotation names, else the configured one, else the first that supports it. A
   * named driver that cannot run the VMI is an error, not a fallback.
   */
  select(vmi: VirtualMachineInstance, capabilities: HostCapabilities): DriverFactory {
    const who = `VirtualMachineInstance ${vmi.metadata?.namespace ?? 'default'}/${vmi.metadata?.name ?? '?'}`;
    const annotated = vmi.metadata?.annotations?.[DRIVER_ANNOTATION];
    const named = annotated ?? this.config.driver;
    if (named) {
      const f = this.factories.get(named);
      if (!f) {
        const where = annotated ? `metadata.annotations[${DRIVER_ANNOTATION}]` : 'the driver configuration';
        throw new DriverError(
          'Unsupported',
          `${who}: ${where} names driver ${named}, which is not registered (known: ${this.driverNames().join(', ') || 'none'})`,
        );
      }
      const ok = f.supports?.(vmi, capabilities, this.config) ?? true;
      if (ok !== true) throw new DriverError('Unsupported', `${who}: driver ${named} cannot run it: ${ok}`);
      return f;
    }
    const reasons: string[] = [];
    for (const f of this.factories.values()) {
      const ok = f.supports?.(vmi, capabilities, this.config) ?? true;
      if (ok === true) return f;
      reasons.push(`${f.name}: ${ok}`);
    }
    throw new DriverError(
      'Unsupported',
      `${who}: no registered driver can run it${reasons.length ? ` (${reasons.join('; ')})` : ''}`,
    );
  }

  /** Builds the driver `name` (default: the configured one, else the first registered). */
  async create(name?: string): Promise<HypervisorDriver> {
    const chosen = name ?? this.config.driver ?? this.driverNames()[0];
    if (!chosen) throw new DriverError('Unsupported', 'no hypervisor driver is registered');
    const f = this.factory(chosen);
    return f.create({
      config: this.config,
      settings: this.config.settings?.[chosen] ?? {},
      plugins: this.plugins(),
    });
  }

  /** Enabled plugins that apply to `vmi`. */
  pluginsFor(vmi: VirtualMachineInstance): HypervisorPlugin[] {
    return pluginsFor(this.plugins(), vmi);
  }

  /** Node labels from every enabled plugin. */
  nodeLabels(capabilities: HostCapabilities): Record<string, string> {
    return collectNodeLabels(this.plugins(), capabilities);
  }

  /** Device resources (capacity) from every enabled plugin. */
  deviceResources(capabilities: HostCapabilities): Record<string, number> {
    return collectDeviceResources(this.plugins(), capabilities);
  }

  /** Launcher memory overhead of `vmi`: the driver's plus the applicable plugins'. */
  memoryOverhead(vmi: VirtualMachineInstance, driver: HypervisorDriver): number {
    return driver.memoryOverhead(vmi) + collectMemoryOverhead(this.plugins(), vmi);
  }

  /** Admission causes from the applicable plugins' rules. */
  admit(vmi: VirtualMachineInstance): AdmissionCause[] {
    return admit(this.plugins(), vmi);
  }

  /** Launcher operations of the enabled plugins. */
  launcherOperations(): Map<string, { plugin: string; operation: LauncherOperation }> {
    return collectLauncherOperations(this.plugins());
  }
}

/** Service identifiers of the driver composition. */
export const DriverTokens = {
  config: Symbol.for('kubevirt-ts.DriverConfig'),
  factory: Symbol.for('kubevirt-ts.DriverFactory'),
  plugin: Symbol.for('kubevirt-ts.HypervisorPlugin'),
  registry: Symbol.for('kubevirt-ts.DriverRegistry'),
  driver: Symbol.for('kubevirt-ts.HypervisorDriver'),
} as const;

/** What `createDriverContainer` composes. */
export interface DriverComposition {
  factories: readonly DriverFactory[];
  plugins?: readonly HypervisorPlugin[];
  config?: DriverConfig;
  /** Bind into this container instead of a new one. */
  container?: Container;
}

/**
 * Binds the config, every factory and plugin (multi-bindings), the registry and the
 * configured driver (a singleton built on first `getAsync(DriverTokens.driver)`).
 * More factories or plugins can be bound to the same tokens before first resolution.
 */
export function createDriverContainer(composition: DriverComposition): Container {
  const c = composition.container ?? new Container();
  c.bind<DriverConfig>(DriverTokens.config).toConstantValue(composition.config ?? {});
  for (const f of composition.factories) c.bind<DriverFactory>(DriverTokens.factory).toConstantValue(f);
  for (const p of composition.plugins ?? []) c.bind<HypervisorPlugin>(DriverTokens.plugin).toConstantValue(p);
  c.bind<DriverRegistry>(DriverTokens.registry)
    .toResolvedValue(
      (factories: DriverFactory[], plugins: HypervisorPlugin[] | undefined, config: DriverConfig) =>
        new DriverRegistry(factories, plugins ?? [], config),
      [
        { serviceIdentifier: DriverTokens.factory, isMultiple: true },
        { serviceIdentifier: DriverTokens.plugin, isMultiple: true, optional: true },
        DriverTokens.config,
      ],
    )
    .inSingletonScope();
  c.bind<HypervisorDriver>(DriverTokens.driver)
    .toDynamicValue((ctx) => ctx.get<DriverRegistry>(DriverTokens.registry).create())
    .inSingletonScope();
  return c;
}
