import type { VirtualMachineInstance } from '../../api';
import { convertVMI, type Domain, defaultConverterContext, encodeDomain } from '../../converter';
import {
  type ConsoleEndpoint,
  type DomainEvent,
  type DomainInfo,
  type DomainRef,
  type DomainStats,
  domainName,
  type FsFreezeSupport,
  type HostCapabilities,
  type HypervisorDriver,
  type MigrationSupport,
  refOf,
  type Screenshot,
  type SevSupport,
  type ShutdownOptions,
  type SyncOptions,
  type VncEndpoint,
} from '../driver';
import { chooseVirtType, type VirtType } from '../emulation/virt-type';
import { DriverError } from '../errors';
import { EventHub } from '../event-hub';
import type { GuestAgentSupport } from '../guest-agent';
import {
  CreateFlags,
  LibvirtClient,
  type DomainRef as LibvirtDomain,
  LibvirtError,
  UndefineFlags,
  VIR_ERR_ARGUMENT_UNSUPPORTED,
  VIR_ERR_INVALID_ARG,
  VIR_ERR_NO_DOMAIN,
  VIR_ERR_NO_SUPPORT,
  VIR_ERR_OPERATION_INVALID,
} from '../libvirt';
import { applyDomainMutations } from '../plugin';
import { SevAttestation } from '../sev-snp/attestation';
import { probeSevCapabilities } from '../sev-snp/capabilities';
import { bulkStats } from './bulk-stats';
import { mapLibvirtError } from './error-map';
import { libvirtFsFreeze } from './fs-freeze';
import { libvirtGuestAgent } from './guest-agent';
import { parseDomainCapabilities, parseHostCapabilities, toHostCapabilities } from './host-probe';
import { consoleOf, vncOf } from './live-devices';
import { libvirtMigration } from './migration';
import type { LibvirtDriverOptions } from './options';
import { libvirtScreenshot } from './screenshot';
import { ensureSocketDirs } from './socket-dirs';
import { lifecycleToEvent, reasonName, stateName } from './states';

export type { DomainRenderer, LibvirtDriverOptions } from './options';
export { ensureSocketDirs } from './socket-dirs';

/** Extra launcher memory the driver asks for when a guest runs under TCG: QEMU's translation cache. */
const TCG_OVERHEAD_BYTES = 128 * 1024 * 1024;

const DOMAIN_NAME_RE = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)_(.+)$/;

/** A `HypervisorDriver` over libvirt. Build it with `LibvirtDriver.connect`. */
export class LibvirtDriver implements HypervisorDriver {
  readonly name: string;
  private readonly hub = new EventHub<DomainEvent>();
  private capabilities: Promise<HostCapabilities> | undefined;
  private closed = false;

  private constructor(
    private readonly client: LibvirtClient,
    private readonly options: LibvirtDriverOptions,
    private readonly streams: Array<{ close(): Promise<void> }>,
  ) {
    this.name = options.name ?? 'libvirt';
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
      throw this.mapError(e, 'host', 'probe');
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
    const ref = refOf(vmi);
    const caps = await this.hostCapabilities();
    const virtType = chooseVirtType({
      capabilities: caps,
      useEmulation: options.useEmulation ?? false,
      subject: `VirtualMachineInstance ${ref.namespace}/${ref.name}`,
    });
    const ctx = defaultConverterContext({
      arch: caps.arch,
      kvmAvailable: virtType === 'kvm',
      allowEmulation: virtType === 'qemu',
      sev: caps.sev?.sev
        ? {
            cbitpos: caps.sev.cbitpos ?? 0,
            reducedPhysBits: caps.sev.reducedPhysBits ?? 0,
            es: caps.sev.sevEs,
            snp: caps.sev.sevSnp,
          }
        : undefined,
      ...this.options.converterContext,
    });
    let domain: Domain;
    try {
      domain = (this.options.render ?? convertVMI)(vmi, ctx);
    } catch (e) {
      throw new DriverError(
        'Invalid',
        `VirtualMachineInstance ${ref.namespace}/${ref.name}: ${(e as Error).message}`,
        {
          cause: e,
        },
      );
    }
    domain.type = virtType;
    domain.name = domainName(ref);
    applyDomainMutations(this.options.plugins ?? [], domain, vmi, {
      capabilities: caps,
      options,
      driver: this.name,
    });
    return { domain, virtType };
  }

  async sync(vmi: VirtualMachineInstance, options: SyncOptions = {}): Promise<DomainInfo> {
    const ref = refOf(vmi);
    const name = domainName(ref);
    let dom = await this.lookup(name);
    if (dom && dom.id >= 0) {
      // Active (running or paused): never restart or redefine a live guest.
      return this.info(dom);
    }
    const { domain } = await this.render(vmi, options);
    // Redefining a stopped domain must keep its UUID, or libvirt refuses the new definition.
    if (dom) domain.uuid = dom.uuid;
    await ensureSocketDirs(domain, this.options.qemuUser);
    let text: string;
    try {
      text = encodeDomain(domain);
    } catch (e) {
      throw new DriverError(
        'Invalid',
        `VirtualMachineInstance ${ref.namespace}/${ref.name}: ${(e as Error).message}`,
        {
          cause: e,
        },
      );
    }
    try {
      dom = await this.client.domainDefineXML(text);
      // spec.startStrategy Paused: the guest's vCPUs wait for an unpause, as upstream's launcher starts it.
      const paused = options.paused || vmi.spec?.startStrategy === 'Paused';
      dom = await this.client.domainCreate(dom, paused ? CreateFlags.START_PAUSED : 0);
    } catch (e) {
      throw this.mapError(e, name, 'define and start');
    }
    return this.info(dom);
  }

  /** Live migration, peer to peer (see ./migration). */
  readonly migration: MigrationSupport = libvirtMigration({
    client: () => this.client,
    prepare: async (vmi, options) => {
      const { domain } = await this.render(vmi, options);
      await ensureSocketDirs(domain, this.options.qemuUser);
      return encodeDomain(domain);
    },
    lookup: (ref) => this.mustLookup(ref),
    lookupActive: (ref, op) => this.mustLookupActive(ref, op),
    call: (name, op, fn) => this.call(name, op, fn),
    delete: (ref) => this.delete(ref),
  });

  /** SEV attestation through libvirt's SEV calls (the daemon refuses on hosts without SEV). */
  get sev(): SevSupport {
    this.sevSupport ??= new SevAttestation(this.client).support;
    return this.sevSupport;
  }
  private sevSupport: SevSupport | undefined;

  async pause(ref: DomainRef): Promise<void> {
    const dom = await this.mustLookupActive(ref, 'pause');
    await this.call(dom.name, 'pause', () => this.client.domainSuspend(dom));
  }

  async unpause(ref: DomainRef): Promise<void> {
    const dom = await this.mustLookupActive(ref, 'unpause');
    await this.call(dom.name, 'unpause', () => this.client.domainResume(dom));
  }

  async shutdown(ref: DomainRef, options: ShutdownOptions): Promise<void> {
    const dom = await this.mustLookupActive(ref, 'shut down');
    if (options.graceSeconds > 0) {
      await this.call(dom.name, 'shutdown', () => this.client.domainShutdown(dom));
      const deadline = Date.now() + options.graceSeconds * 1000;
      const poll = this.options.shutdownPollMs ?? 100;
      while (Date.now() < deadline) {
        const st = await this.call(dom.name, 'shutdown', () => this.client.domainGetState(dom));
        if (stateName(st.state) === 'shutoff') return;
        await new Promise((r) => setTimeout(r, poll));
      }
    }
    try {
      await this.client.domainDestroy(dom);
    } catch (e) {
      // It may have powered off between the last look and the destroy.
      if (e instanceof LibvirtError && e.code === VIR_ERR_OPERATION_INVALID) return;
      throw this.mapError(e, dom.name, 'shutdown (kill after grace period)');
    }
  }

  async kill(ref: DomainRef): Promise<void> {
    const dom = await this.mustLookupActive(ref, 'kill');
    await this.call(dom.name, 'kill', () => this.client.domainDestroy(dom));
  }

  async reset(ref: DomainRef): Promise<void> {
    const dom = await this.mustLookupActive(ref, 'reset');
    await this.call(dom.name, 'reset', () => this.client.domainReset(dom));
  }

  async softReboot(ref: DomainRef): Promise<void> {
    const dom = await this.mustLookupActive(ref, 'soft reboot');
    await this.call(dom.name, 'soft reboot', () => this.client.domainReboot(dom));
  }

  async delete(ref: DomainRef): Promise<void> {
    const name = domainName(ref);
    const dom = await this.lookup(name);
    if (!dom) return;
    try {
      await this.client.domainDestroy(dom);
    } catch (e) {
      const gone =
        e instanceof LibvirtError && (e.code === VIR_ERR_OPERATION_INVALID || e.code === VIR_ERR_NO_DOMAIN);
      if (!gone) throw this.mapError(e, name, 'delete (stop)');
    }
    try {
      await this.client.domainUndefine(dom, UndefineFlags.NVRAM);
    } catch (e) {
      if (e instanceof LibvirtError && e.code === VIR_ERR_NO_DOMAIN) return;
      const unsupportedFlag =
        e instanceof LibvirtError &&
        [VIR_ERR_INVALID_ARG, VIR_ERR_ARGUMENT_UNSUPPORTED, VIR_ERR_NO_SUPPORT].includes(e.code);
      if (!unsupportedFlag) throw this.mapError(e, name, 'delete (undefine)');
      // Drivers without NVRAM support (libvirt's test driver) refuse the flag.
      await this.call(name, 'delete (undefine)', () => this.client.domainUndefine(dom));
    }
  }

  async getDomain(ref: DomainRef): Promise<DomainInfo | undefined> {
    const dom = await this.lookup(domainName(ref));
    if (!dom) return undefined;
    try {
      return await this.info(dom);
    } catch (e) {
      if (e instanceof DriverError && e.code === 'NotFound') return undefined;
      throw e;
    }
  }

  async listDomains(): Promise<DomainInfo[]> {
    const all = await this.call('host', 'list domains', () => this.client.listAllDomains());
    const out: DomainInfo[] = [];
    for (const d of all) {
      if (!DOMAIN_NAME_RE.test(d.name)) continue;
      try {
        out.push(await this.info(d));
      } catch (e) {
        // Deleted between listing and looking: not ours to report.
        if (!(e instanceof DriverError && e.code === 'NotFound')) throw e;
      }
    }
    return out;
  }

  async getStats(ref: DomainRef): Promise<DomainStats> {
    const dom = await this.mustLookup(ref);
    const info = await this.call(dom.name, 'stats', () => this.client.domainGetInfo(dom));
    const params = await this.call(dom.name, 'stats', () => bulkStats(this.client, dom));
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
    lookup: (ref) => this.mustLookup(ref),
    liveXml: (dom) => this.call(dom.name, 'read XML', () => this.client.domainGetXMLDesc(dom)),
    agentCommand: (dom, cmd, timeoutSec) => this.client.qemuAgentCommand(dom, cmd, timeoutSec),
  });

  /** Guest filesystem freeze through the agent (see ./fs-freeze). */
  readonly fsFreeze: FsFreezeSupport = libvirtFsFreeze({
    client: () => this.client,
    lookupActive: (ref, op) => this.mustLookupActive(ref, op),
  });

  screenshot(ref: DomainRef): Promise<Screenshot> {
    return libvirtScreenshot(this.client, (r, op) => this.mustLookupActive(r, op), ref);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.streams) await s.close().catch(() => undefined);
    this.hub.close();
    await this.client.close();
  }

  private async liveXml(ref: DomainRef): Promise<{ name: string; text: string }> {
    const dom = await this.mustLookup(ref);
    return {
      name: dom.name,
      text: await this.call(dom.name, 'read XML', () => this.client.domainGetXMLDesc(dom)),
    };
  }

  private async info(dom: LibvirtDomain): Promise<DomainInfo> {
    const [st, info] = await Promise.all([
      this.call(dom.name, 'read state', () => this.client.domainGetState(dom)),
      this.call(dom.name, 'read info', () => this.client.domainGetInfo(dom)),
    ]);
    const state = stateName(st.state);
    const m = DOMAIN_NAME_RE.exec(dom.name);
    // The id changes on every start, so uuid/id names one boot of the domain.
    const id = state === 'shutoff' || state === 'crashed' ? -1 : dom.id;
    return {
      name: dom.name,
      uuid: dom.uuid,
      state,
      reason: reasonName(state, st.reason),
      vmi: m ? { namespace: m[1], name: m[3] } : undefined,
      vcpus: info.nrVirtCpu,
      memoryKiB: info.maxMem,
      bootId: id >= 0 ? `${dom.uuid}/${id}` : '',
    };
  }

  private async lookup(name: string): Promise<LibvirtDomain | undefined> {
    try {
      return await this.client.domainLookupByName(name);
    } catch (e) {
      if (e instanceof LibvirtError && e.code === VIR_ERR_NO_DOMAIN) return undefined;
      throw this.mapError(e, name, 'look up');
    }
  }

  private async mustLookup(ref: DomainRef): Promise<LibvirtDomain> {
    const name = domainName(ref);
    const dom = await this.lookup(name);
    if (!dom) {
      throw new DriverError(
        'NotFound',
        `VirtualMachineInstance ${ref.namespace}/${ref.name}: no domain ${name} on this host`,
      );
    }
    return dom;
  }

  /** Looks the domain up and requires it running or paused (drivers differ in how they refuse otherwise). */
  private async mustLookupActive(ref: DomainRef, op: string): Promise<LibvirtDomain> {
    const dom = await this.mustLookup(ref);
    const st = await this.call(dom.name, op, () => this.client.domainGetState(dom));
    const state = stateName(st.state);
    if (state === 'shutoff' || state === 'crashed') {
      throw new DriverError(
        'InvalidState',
        `domain ${dom.name}: cannot ${op}, it is ${state} (start it first)`,
      );
    }
    return dom;
  }

  private async call<T>(name: string, op: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      throw this.mapError(e, name, op);
    }
  }

  private mapError(e: unknown, name: string, op: string): DriverError {
    return mapLibvirtError(e, name === 'host' ? `${this.name} driver` : `domain ${name}`, op);
  }
}
