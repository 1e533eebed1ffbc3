/**
 * A worked out-of-tree driver and plugin, written only against the package's public
 * subpaths (`kubevirt-ts/drivers`, `kubevirt-ts/converter`, `kubevirt-ts/api`).
 *
 * `AuditDriver` is a complete `HypervisorDriver` that delegates to another driver and
 * keeps an audit trail of every state-changing call (who asked, what, when, and how it
 * ended) — the shape many site-specific drivers take. `watchdogPlugin` adds an i6300esb
 * watchdog to the domain of every VMI that carries the `example.org/watchdog` label.
 */
import type { VirtualMachineInstance } from 'kubevirt-ts/api';
import type { Domain } from 'kubevirt-ts/converter';
import type {
  ConsoleEndpoint,
  DomainEvent,
  DomainInfo,
  DomainRef,
  DomainStats,
  DriverFactory,
  GuestAgentSupport,
  HostCapabilities,
  HypervisorDriver,
  HypervisorPlugin,
  ShutdownOptions,
  SyncOptions,
  VncEndpoint,
} from 'kubevirt-ts/drivers';

/** One audited call. */
export interface AuditRecord {
  at: Date;
  op: string;
  target: string;
  outcome: 'ok' | 'error';
  error?: string;
}

/** Delegates everything to `inner`, recording every state-changing call. */
export class AuditDriver implements HypervisorDriver {
  readonly name = 'audit';
  readonly records: AuditRecord[] = [];

  constructor(private readonly inner: HypervisorDriver) {}

  /** The inner driver's guest agent, if it has one: reads only, so nothing to audit. */
  get guestAgent(): GuestAgentSupport | undefined {
    return this.inner.guestAgent;
  }

  private async audit<T>(op: string, target: string, fn: () => Promise<T>): Promise<T> {
    try {
      const out = await fn();
      this.records.push({ at: new Date(), op, target, outcome: 'ok' });
      return out;
    } catch (e) {
      this.records.push({ at: new Date(), op, target, outcome: 'error', error: (e as Error).message });
      throw e;
    }
  }

  async probe(): Promise<HostCapabilities> {
    return { ...(await this.inner.probe()), driver: this.name };
  }
  sync(vmi: VirtualMachineInstance, options?: SyncOptions): Promise<DomainInfo> {
    return this.audit('sync', `${vmi.metadata?.namespace}/${vmi.metadata?.name}`, () =>
      this.inner.sync(vmi, options),
    );
  }
  pause(ref: DomainRef): Promise<void> {
    return this.audit('pause', `${ref.namespace}/${ref.name}`, () => this.inner.pause(ref));
  }
  unpause(ref: DomainRef): Promise<void> {
    return this.audit('unpause', `${ref.namespace}/${ref.name}`, () => this.inner.unpause(ref));
  }
  shutdown(ref: DomainRef, options: ShutdownOptions): Promise<void> {
    return this.audit('shutdown', `${ref.namespace}/${ref.name}`, () => this.inner.shutdown(ref, options));
  }
  kill(ref: DomainRef): Promise<void> {
    return this.audit('kill', `${ref.namespace}/${ref.name}`, () => this.inner.kill(ref));
  }
  reset(ref: DomainRef): Promise<void> {
    return this.audit('reset', `${ref.namespace}/${ref.name}`, () => this.inner.reset(ref));
  }
  softReboot(ref: DomainRef): Promise<void> {
    return this.audit('softReboot', `${ref.namespace}/${ref.name}`, () => this.inner.softReboot(ref));
  }
  delete(ref: DomainRef): Promise<void> {
    return this.audit('delete', `${ref.namespace}/${ref.name}`, () => this.inner.delete(ref));
  }
  getDomain(ref: DomainRef): Promise<DomainInfo | undefined> {
    return this.inner.getDomain(ref);
  }
  listDomains(): Promise<DomainInfo[]> {
    return this.inner.listDomains();
  }
  getStats(ref: DomainRef): Promise<DomainStats> {
    return this.inner.getStats(ref);
  }
  events(): AsyncIterable<DomainEvent> {
    return this.inner.events();
  }
  consoleEndpoint(ref: DomainRef): Promise<ConsoleEndpoint> {
    return this.inner.consoleEndpoint(ref);
  }
  vncEndpoint(ref: DomainRef): Promise<VncEndpoint> {
    return this.inner.vncEndpoint(ref);
  }
  memoryOverhead(vmi: VirtualMachineInstance): number {
    return this.inner.memoryOverhead(vmi);
  }
  close(): Promise<void> {
    return this.inner.close();
  }
}

/** Registers `AuditDriver` around whatever `makeInner` builds. */
export function auditDriverFactory(
  makeInner: () => HypervisorDriver | Promise<HypervisorDriver>,
): DriverFactory {
  return { name: 'audit', create: async () => new AuditDriver(await makeInner()) };
}

/** The label that asks for a watchdog. */
export const WATCHDOG_LABEL = 'example.org/watchdog';

/** Adds an i6300esb watchdog (action: reset) to labelled VMIs' domains. */
export const watchdogPlugin: HypervisorPlugin = {
  name: 'example-watchdog',
  appliesTo: (vmi) => vmi.metadata?.labels?.[WATCHDOG_LABEL] === 'true',
  mutateDomain(domain: Domain) {
    domain.devices.watchdog = [{ model: 'i6300esb', action: 'reset' }];
  },
  nodeLabels: (): Record<string, string> => ({ 'example.org/watchdog-capable': 'true' }),
};
