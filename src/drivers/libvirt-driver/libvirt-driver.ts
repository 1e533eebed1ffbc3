/**
 * The `HypervisorDriver` over libvirt: connects, subscribes to domain events, probes the
 * host, defines and starts domains from VMIs, and runs lifecycle, stats, console, migration,
 * guest-agent and SEV operations on them. Rendering a VMI's domain is ./render, finding and
 * reading our domains ./domains.
 */
import type { VirtualMachineInstance } from '../../api';
import { type Domain, encodeDomain } from '../../converter';
import {
  type ConsoleEndpoint,
  type CpuHotplugSupport,
  type DiskHotplugSupport,
  type DomainEvent,
  type DomainInfo,
  type DomainRef,
  type DomainStats,
  domainName,
  type FsFreezeSupport,
  type HostCapabilities,
  type HypervisorDriver,
  type MemoryDumpSupport,
  type MemoryHotplugSupport,
  type MigrationSupport,
  type NicHotplugSupport,
  refOf,
  type Screenshot,
  type SevSupport,
  type ShutdownOptions,
  type SoftRebootOptions,
  type SyncOptions,
  type VncEndpoint,
} from '../driver';
import type { VirtType } from '../emulation/virt-type';
import { DriverError } from '../errors';
import { EventHub } from '../event-hub';
import type { GuestAgentSupport } from '../guest-agent';
import {
  CreateFlags,
  DomainXMLFlags,
  LibvirtClient,
  type DomainRef as LibvirtDomain,
  LibvirtError,
  VIR_ERR_AGENT_UNRESPONSIVE,
} from '../libvirt';
import { SevAttestation } from '../sev-snp/attestation';
import { probeSevCapabilities } from '../sev-snp/capabilities';
import { bulkStats } from './bulk-stats';
import { libvirtCpuHotplug } from './cpu-hotplug';
import { libvirtDiskHotplug } from './disk-hotplug';
import { DOMAIN_NAME_RE, LibvirtDomains } from './domains';
import { libvirtFsFreeze } from './fs-freeze';
import { libvirtGuestAgent } from './guest-agent';
import { parseDomainCapabilities, parseHostCapabilities, toHostCapabilities } from './host-probe';
import { wantsHotplugPorts, withHotplugPorts } from './hotplug-ports';
import { consoleOf, vncOf } from './live-devices';
import { libvirtMemoryDump } from './memory-dump';
import { libvirtMemoryHotplug } from './memory-hotplug';
import { libvirtMigration } from './migration';
import { libvirtNicHotplug } from './nic-hotplug';
import type { LibvirtDriverOptions } from './options';
import { invalidVmi, renderDomain } from './render';
import { libvirtScreenshot } from './screenshot';
import { ensureSocketDirs } from './socket-dirs';
import { lifecycleToEvent } from './states';
import { deleteDomain, shutdownDomain } from './stop-domain';

export type { DomainRenderer, LibvirtDriverOptions } from './options';
export { ensureSocketDirs } from './socket-dirs';

/** Extra launcher memory the driver asks for when a guest runs under TCG: QEMU's translation cache. */
const TCG_OVERHEAD_BYTES = 128 * 1024 * 1024;

/** A `HypervisorDriver` over libvirt. Build it with `LibvirtDriver.connect`. */
export class LibvirtDriver implements HypervisorDriver {
  readonly name: string;
  private readonly hub = new EventHub<DomainEvent>();
  private capabilities: Promise<HostCapabilities> | undefined;
  private closed = false;
  private readonly domains: LibvirtDomains;
  /** libvirt's test driver (no PCI addressing: no spare hotplug ports), known once probed. */
  private testDriver = false;

  private constructor(
    private readonly client: LibvirtClient,
    private readonly options: LibvirtDriverOptions,
    private readonly streams: Array<{ close(): Promise<void> }>,
  ) {
    this.name = options.name ?? 'libvirt';
    this.domains = new LibvirtDomains(client, this.name);
  }

  /** Connects to the daemon and subscribes to domain events. */
  static async connect(options: LibvirtDriverOptions = {}): Promise<LibvirtDriver> {
    const client = await LibvirtClient.connect({ uri: options.uri, socketPath: options.socketPath });
    try {
      const lifecycle = await client.domainEvents('lifecycle');
      const reboot = await client.domainEvents('reboot');
      const agent = await client.domainEvents('agent-lifecycle');
      const driver = new LibvirtDriver(client, options, [lifecycle, reboot, agent]);
      void driver.pump(lifecycle, (ev) => lifecycleToEvent(ev.dom.name, ev.event, ev.detail));
      void driver.pump(reboot, (ev) => ({ type: 'rebooted', domain: ev.dom.name }));
      // VIR_CONNECT_DOMAIN_EVENT_AGENT_LIFECYCLE_STATE_CONNECTED = 1, DISCONNECTED = 2.
      void driver.pump(agent, (ev) => ({ type: 'agent', domain: ev.dom.name, connected: ev.state === 1 }));
      return driver;
    } catch (e) {
      await client.close();
      throw e;
    }
  }

  /** The libvirt client this driver talks through (for plugins' launcher operations). */
  get libvirt(): LibvirtClient {
    return this.client;
  }

  private async pump<T extends { dom: LibvirtDomain }>(
    stream: AsyncIterable<T>,
    map: (ev: T) => DomainEvent | undefined,
  ): Promise<void> {
    try {
      for await (const ev of stream) {
        if (!DOMAIN_NAME_RE.test(ev.dom.name)) continue;
        const out = map(ev);
        if (out) this.hub.publish(out);
      }
    } catch {
      // The connection is gone; subscribers end below and callers see errors on their next call.
    }
    this.hub.close();
  }

  async probe(): Promise<HostCapabilities> {
    try {
      const [hostXml, type, node] = await Promise.all([
        this.client.getCapabilities(),
        this.client.getType(),
        this.client.nodeGetInfo(),
      ]);
      const host = parseHostCapabilities(hostXml);
      const testDriver = type.toLowerCase() === 'test';
      this.testDriver = testDriver;
      let domcaps: ReturnType<typeof parseDomainCapabilities> | undefined;
      let sev: HostCapabilities['sev'];
      if (!testDriver) {
        const virtType = host.domainTypes.includes('kvm') && this.options.allowKvm !== false ? 'kvm' : 'qemu';
        const domXml = await this.client.getDomainCapabilities({ arch: host.arch, virtType });
        domcaps = parseDomainCapabilities(domXml);
        sev = await probeSevCapabilities(domXml, this.options.sysfsRoot);
      }
      const caps = toHostCapabilities({
        driverName: this.name,
        host,
        domcaps,
        nodeMemoryKiB: node.memory,
        nodeCpus: node.cpus,
        sev,
        allowKvm: this.options.allowKvm !== false,
        testDriver,
      });
      this.capabilities = Promise.resolve(caps);
      return structuredClone(caps);
    } catch (e) {
      throw this.domains.mapError(e, 'host', 'probe');
    }
  }

  private hostCapabilities(): Promise<HostCapabilities> {
    this.capabilities ??= this.probe();
    return this.capabilities;
  }

  /** The domain model `sync` would define for `vmi` (converted, adjusted by plugins), and its type. */
  async render(
    vmi: VirtualMachineInstance,
    options: SyncOptions = {},
  ): Promise<{ domain: Domain; virtType: VirtType }> {
    return renderDomain(vmi, await this.hostCapabilities(), this.options, this.name, options);
  }

  async sync(vmi: VirtualMachineInstance, options: SyncOptions = {}): Promise<DomainInfo> {
    const ref = refOf(vmi);
    const name = domainName(ref);
    let dom = await this.domains.lookup(name);
    if (dom && dom.id >= 0) {
      // Active (running or paused): never restart or redefine a live guest.
      return this.domains.info(dom);
    }
    const { domain } = await this.render(vmi, options);
    // Redefining a stopped domain must keep its UUID, or libvirt refuses the new definition.
    if (dom) domain.uuid = dom.uuid;
    await ensureSocketDirs(domain, this.options.qemuUser);
    let text: string;
    try {
      text = encodeDomain(domain);
    } catch (e) {
      throw invalidVmi(vmi, e);
    }
    try {
      dom = await this.client.domainDefineXML(text);
      if (wantsHotplugPorts(vmi, domain) && !this.testDriver) {
        const back = await this.client.domainGetXMLDesc(dom, DomainXMLFlags.INACTIVE);
        dom = await this.client.domainDefineXML(withHotplugPorts(back));
      }
      // spec.startStrategy Paused: the guest's vCPUs wait for an unpause, as upstream's launcher starts it.
      const paused = options.paused || vmi.spec?.startStrategy === 'Paused';
      dom = await this.client.domainCreate(dom, paused ? CreateFlags.START_PAUSED : 0);
    } catch (e) {
      throw this.domains.mapError(e, name, 'define and start');
    }
    return this.domains.info(dom);
  }

  /** Live migration, peer to peer (see ./migration). */
  readonly migration: MigrationSupport = libvirtMigration({
    client: () => this.client,
    prepare: async (vmi, options) => {
      const { domain } = await this.render(vmi, options);
      await ensureSocketDirs(domain, this.options.qemuUser);
      return encodeDomain(domain);
    },
    lookup: (ref) => this.domains.mustLookup(ref),
    lookupActive: (ref, op) => this.domains.mustLookupActive(ref, op),
    call: (name, op, fn) => this.domains.call(name, op, fn),
    delete: (ref) => this.delete(ref),
  });

  /** SEV attestation through libvirt's SEV calls (the daemon refuses on hosts without SEV). */
  get sev(): SevSupport {
    this.sevSupport ??= new SevAttestation(this.client).support;
    return this.sevSupport;
  }
  private sevSupport: SevSupport | undefined;

  async pause(ref: DomainRef): Promise<void> {
    await this.onActive(ref, 'pause', (dom) => this.client.domainSuspend(dom));
  }

  async unpause(ref: DomainRef): Promise<void> {
    await this.onActive(ref, 'unpause', (dom) => this.client.domainResume(dom));
  }

  /** Looks up the running or paused domain of `ref` and runs `fn` on it as `op`. */
  private async onActive(
    ref: DomainRef,
    op: string,
    fn: (dom: LibvirtDomain) => Promise<unknown>,
  ): Promise<void> {
    const dom = await this.domains.mustLookupActive(ref, op);
    await this.domains.call(dom.name, op, () => fn(dom));
  }

  async shutdown(ref: DomainRef, options: ShutdownOptions): Promise<void> {
    await shutdownDomain(this.client, this.domains, ref, options, this.options.shutdownPollMs ?? 100);
  }

  async kill(ref: DomainRef): Promise<void> {
    await this.onActive(ref, 'kill', (dom) => this.client.domainDestroy(dom));
  }

  async reset(ref: DomainRef): Promise<void> {
    await this.onActive(ref, 'reset', (dom) => this.client.domainReset(dom));
  }

  async softReboot(ref: DomainRef, options?: SoftRebootOptions): Promise<void> {
    // upstream's SoftRebootVMI: VIR_DOMAIN_REBOOT_GUEST_AGENT (2) or _ACPI_POWER_BTN (1); an
    // agent that does not answer is not an error.
    const flags = options?.via === 'agent' ? 2 : 1;
    await this.onActive(ref, 'soft reboot', (dom) =>
      this.client.domainReboot(dom, flags).catch((e: unknown) => {
        if (e instanceof LibvirtError && e.code === VIR_ERR_AGENT_UNRESPONSIVE) return;
        throw e;
      }),
    );
  }

  async delete(ref: DomainRef): Promise<void> {
    await deleteDomain(this.client, this.domains, ref);
  }

  async getDomain(ref: DomainRef): Promise<DomainInfo | undefined> {
    const dom = await this.domains.lookup(domainName(ref));
    if (!dom) return undefined;
    try {
      return await this.domains.info(dom);
    } catch (e) {
      if (e instanceof DriverError && e.code === 'NotFound') return undefined;
      throw e;
    }
  }

  async listDomains(): Promise<DomainInfo[]> {
    const all = await this.domains.call('host', 'list domains', () => this.client.listAllDomains());
    const out: DomainInfo[] = [];
    for (const d of all) {
      if (!DOMAIN_NAME_RE.test(d.name)) continue;
      try {
        out.push(await this.domains.info(d));
      } catch (e) {
        // Deleted between listing and looking: not ours to report.
        if (!(e instanceof DriverError && e.code === 'NotFound')) throw e;
      }
    }
    return out;
  }

  async getStats(ref: DomainRef): Promise<DomainStats> {
    const dom = await this.domains.mustLookup(ref);
    const info = await this.domains.call(dom.name, 'stats', () => this.client.domainGetInfo(dom));
    const params = await this.domains.call(dom.name, 'stats', () => bulkStats(this.client, dom));
    return { name: dom.name, cpuTimeNs: info.cpuTime, memoryKiB: info.memory, vcpus: info.nrVirtCpu, params };
  }

  events(): AsyncIterable<DomainEvent> {
    if (this.closed) throw new DriverError('InvalidState', `${this.name} driver: events() after close()`);
    return this.hub.subscribe();
  }

  async consoleEndpoint(ref: DomainRef): Promise<ConsoleEndpoint> {
    return consoleOf(await this.liveXml(ref));
  }

  async vncEndpoint(ref: DomainRef): Promise<VncEndpoint> {
    return vncOf(await this.liveXml(ref));
  }

  memoryOverhead(_vmi: VirtualMachineInstance): number {
    return this.options.allowKvm === false ? TCG_OVERHEAD_BYTES : 0;
  }

  /** The QEMU guest agent, through libvirt (see ./guest-agent). */
  readonly guestAgent: GuestAgentSupport = libvirtGuestAgent({
    lookup: (ref) => this.domains.mustLookup(ref),
    liveXml: (dom) => this.domains.call(dom.name, 'read XML', () => this.client.domainGetXMLDesc(dom)),
    agentCommand: (dom, cmd, timeoutSec) => this.client.qemuAgentCommand(dom, cmd, timeoutSec),
  });

  /** Volume hotplug: live attach and detach of disks (see ./disk-hotplug). */
  readonly hotplug: DiskHotplugSupport = libvirtDiskHotplug({
    client: () => this.client,
    lookupActive: (ref, op) => this.domains.mustLookupActive(ref, op),
    call: (name, op, fn) => this.domains.call(name, op, fn),
    render: (vmi, options) => this.render(vmi, options),
    hotplugDir: () => this.options.converterContext?.paths?.hotplugDiskDir,
  });

  /** NIC hotplug: live attach and detach of interfaces (see ./nic-hotplug). */
  readonly nicHotplug: NicHotplugSupport = libvirtNicHotplug({
    client: () => this.client,
    lookupActive: (ref, op) => this.domains.mustLookupActive(ref, op),
    call: (name, op, fn) => this.domains.call(name, op, fn),
    render: (vmi, options) => this.render(vmi, options),
  });

  /** Memory-only core dumps of the running guest (see ./memory-dump). */
  readonly memoryDump: MemoryDumpSupport = libvirtMemoryDump({
    client: () => this.client,
    lookupActive: (ref, op) => this.domains.mustLookupActive(ref, op),
  });

  /** CPU hotplug: the running guest's vCPU count (see ./cpu-hotplug). */
  readonly cpuHotplug: CpuHotplugSupport = libvirtCpuHotplug({
    client: () => this.client,
    lookupActive: (ref, op) => this.domains.mustLookupActive(ref, op),
    call: (name, op, fn) => this.domains.call(name, op, fn),
  });

  /** Memory hotplug: the running guest's virtio-mem device (see ./memory-hotplug). */
  readonly memoryHotplug: MemoryHotplugSupport = libvirtMemoryHotplug({
    client: () => this.client,
    lookupActive: (ref, op) => this.domains.mustLookupActive(ref, op),
    call: (name, op, fn) => this.domains.call(name, op, fn),
  });

  /** Guest filesystem freeze through the agent (see ./fs-freeze). */
  readonly fsFreeze: FsFreezeSupport = libvirtFsFreeze({
    client: () => this.client,
    lookupActive: (ref, op) => this.domains.mustLookupActive(ref, op),
  });

  screenshot(ref: DomainRef): Promise<Screenshot> {
    return libvirtScreenshot(this.client, (r, op) => this.domains.mustLookupActive(r, op), ref);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.streams) await s.close().catch(() => undefined);
    this.hub.close();
    await this.client.close();
  }

  private async liveXml(ref: DomainRef): Promise<{ name: string; text: string }> {
    const dom = await this.domains.mustLookup(ref);
    return {
      name: dom.name,
      text: await this.domains.call(dom.name, 'read XML', () => this.client.domainGetXMLDesc(dom)),
    };
  }
}
