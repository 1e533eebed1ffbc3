/**
 * The libvirt driver: runs VMIs as libvirt domains through the project's own libvirt
 * client (no native addon). `sync` converts the VMI (the converter), lets the enabled
 * plugins adjust the domain, defines and starts it; lifecycle calls map one-to-one to
 * libvirt's; events come from one daemon-side lifecycle subscription. The daemon is
 * chosen by URI and socket: the shared system daemon (`qemu:///system` on
 * `/var/run/libvirt/libvirt-sock`) or a per-VM daemon (its own socket path).
 */
import { chmod, chown, mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { XMLParser } from 'fast-xml-parser';
import type { VirtualMachineInstance } from '../../api';
import {
  type ConverterContext,
  convertVMI,
  type Domain,
  defaultConverterContext,
  encodeDomain,
} from '../../converter';
import {
  type ConsoleEndpoint,
  type DomainEvent,
  type DomainInfo,
  type DomainRef,
  type DomainStats,
  domainName,
  type HostCapabilities,
  type HypervisorDriver,
  type MigrationSupport,
  refOf,
  type SevSupport,
  type ShutdownOptions,
  type SyncOptions,
  type VncEndpoint,
} from '../driver';
import { chooseVirtType, type VirtType } from '../emulation/virt-type';
import { DriverError, type DriverErrorCode } from '../errors';
import { EventHub } from '../event-hub';
import type { GuestAgentSupport } from '../guest-agent';
import {
  CreateFlags,
  DomainXMLFlags,
  LibvirtClient,
  type DomainRef as LibvirtDomain,
  LibvirtError,
  MigrateFlags,
  type TypedParam,
  tp,
  typedParamsToRecord,
  UndefineFlags,
  VIR_ERR_ARGUMENT_UNSUPPORTED,
  VIR_ERR_CONFIG_UNSUPPORTED,
  VIR_ERR_INVALID_ARG,
  VIR_ERR_NO_DOMAIN,
  VIR_ERR_NO_SUPPORT,
  VIR_ERR_OPERATION_INVALID,
  VIR_ERR_OPERATION_UNSUPPORTED,
  VIR_ERR_XML_DETAIL,
  VIR_ERR_XML_ERROR,
} from '../libvirt';
import { applyDomainMutations, type HypervisorPlugin } from '../plugin';
import { SevAttestation } from '../sev-snp/attestation';
import { probeSevCapabilities } from '../sev-snp/capabilities';
import { libvirtGuestAgent } from './guest-agent';
import { parseDomainCapabilities, parseHostCapabilities, toHostCapabilities } from './host-probe';
import { migratableXmlForTarget } from './migratable-xml';
import { lifecycleToEvent, reasonName, stateName } from './states';

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

/** VIR_MIGRATE_UNSAFE: migrate even where libvirt thinks it unsafe (e.g. disk cache modes). */
const MIGRATE_UNSAFE = 512;
/** VIR_MIGRATE_PARALLEL: memory over several connections (`parallel.connections`). */
const MIGRATE_PARALLEL = 131072;

/** Extra launcher memory the driver asks for when a guest runs under TCG: QEMU's translation cache. */
const TCG_OVERHEAD_BYTES = 128 * 1024 * 1024;

const DOMAIN_NAME_RE = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?)_(.+)$/;

const xml = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  isArray: (name) => ['serial', 'console', 'graphics', 'listen'].includes(name),
});

/** The parts of a live domain's `<devices>` the console and VNC lookups read (fast-xml-parser shape). */
interface LiveChar {
  '@_type'?: string;
  '@_tty'?: string;
  source?: { '@_path'?: string };
}
interface LiveGraphics {
  '@_type'?: string;
  '@_port'?: string;
  '@_listen'?: string;
  '@_socket'?: string;
  listen?: Array<{ '@_type'?: string; '@_socket'?: string }>;
}
interface LiveDevices {
  serial?: LiveChar[];
  console?: LiveChar[];
  graphics?: LiveGraphics[];
}

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
      if (!options.paused) dom = await this.client.domainCreate(dom);
      else dom = await this.client.domainCreate(dom, CreateFlags.START_PAUSED);
    } catch (e) {
      throw this.mapError(e, name, 'define and start');
    }
    return this.info(dom);
  }

  /**
   * Live migration, peer to peer, as upstream's launcher does it: the source daemon
   * connects to the target daemon itself (`virDomainMigrateToURI3` with LIVE | PEER2PEER
   * | PERSIST_DEST | UNDEFINE_SOURCE, plus AUTO_CONVERGE / POSTCOPY / UNSAFE as the
   * options ask). The target's driver renders the domain for its own pod in
   * `prepareTarget`; that XML travels as the cookie, and the source sends its own
   * migratable live XML with the target's paths swapped in (`destination_xml` and
   * `persistent_xml`), so the guest ABI is unchanged and its sockets land in the target
   * pod's directories.
   */
  readonly migration: MigrationSupport = {
    prepareTarget: async (vmi, options = {}) => {
      const { domain } = await this.render(vmi, options);
      await ensureSocketDirs(domain, this.options.qemuUser);
      return encodeDomain(domain);
    },
    migrateSource: async (ref, targetUri, cookie, options = {}) => {
      if (!/^[a-z][a-z0-9+.-]*:\/\/[^\s]*$/.test(targetUri)) {
        throw new DriverError(
          'Invalid',
          `migration of ${domainName(ref)}: target URI ${JSON.stringify(targetUri)} is not a libvirt URI (e.g. qemu+tcp://node2/system)`,
        );
      }
      const bandwidth = options.bandwidthMiBps ?? 0;
      if (!Number.isInteger(bandwidth) || bandwidth < 0) {
        throw new DriverError(
          'Invalid',
          `migration of ${domainName(ref)}: bandwidth ${bandwidth} MiB/s must be a non-negative integer`,
        );
      }
      const dom = await this.mustLookupActive(ref, 'migrate');
      const params: TypedParam[] = [];
      if (cookie) {
        const live = await this.call(dom.name, 'read migratable XML', () =>
          this.client.domainGetXMLDesc(dom, DomainXMLFlags.SECURE | DomainXMLFlags.MIGRATABLE),
        );
        let xmlForTarget: string;
        try {
          xmlForTarget = migratableXmlForTarget(live, cookie);
        } catch (e) {
          throw new DriverError(
            'Invalid',
            `migration of ${dom.name}: the target's prepared domain XML is unusable: ${(e as Error).message}`,
          );
        }
        params.push(tp.string('destination_xml', xmlForTarget), tp.string('persistent_xml', xmlForTarget));
      }
      if (bandwidth > 0) params.push(tp.ullong('bandwidth', bandwidth));
      if (options.migrateUri) {
        if (!/^(tcp|unix|rdma):\/\/[^\s]+$/.test(options.migrateUri)) {
          throw new DriverError(
            'Invalid',
            `migration of ${domainName(ref)}: migrate URI ${JSON.stringify(options.migrateUri)} is not a tcp://, unix:// or rdma:// URI`,
          );
        }
        params.push(tp.string('migrate_uri', options.migrateUri));
      }
      let flags =
        MigrateFlags.LIVE | MigrateFlags.PEER2PEER | MigrateFlags.PERSIST_DEST | MigrateFlags.UNDEFINE_SOURCE;
      if (options.allowAutoConverge) flags |= MigrateFlags.AUTO_CONVERGE;
      if (options.allowPostCopy) flags |= MigrateFlags.POSTCOPY;
      if (options.unsafe) flags |= MIGRATE_UNSAFE;
      if (options.parallelConnections !== undefined) {
        const n = options.parallelConnections;
        if (!Number.isInteger(n) || n < 1) {
          throw new DriverError(
            'Invalid',
            `migration of ${domainName(ref)}: parallel connections ${n} must be a positive integer`,
          );
        }
        flags |= MIGRATE_PARALLEL;
        params.push(tp.int('parallel.connections', n));
      }
      await this.call(dom.name, `migrate to ${targetUri}`, () =>
        this.client.domainMigrateToURI3(dom, targetUri, params, flags),
      );
    },
    progress: async (ref) => {
      const dom = await this.mustLookup(ref);
      const job = await this.call(dom.name, 'read migration job', () => this.client.domainGetJobStats(dom));
      // virDomainJobType: 1 bounded, 2 unbounded (a migration); anything else: no job running.
      if (job.type !== 1 && job.type !== 2) return undefined;
      const p = typedParamsToRecord(job.params);
      const n = (k: string) => Number(p[k] ?? 0);
      return {
        dataTotal: n('data_total'),
        dataProcessed: n('data_processed'),
        dataRemaining: n('data_remaining'),
        elapsedMs: n('time_elapsed'),
      };
    },
    cancel: async (ref) => {
      const dom = await this.mustLookup(ref);
      await this.call(dom.name, 'abort migration job', () => this.client.domainAbortJob(dom));
    },
    abortTarget: (ref) => this.delete(ref),
  };

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
    return { name: dom.name, cpuTimeNs: info.cpuTime, memoryKiB: info.memory, vcpus: info.nrVirtCpu };
  }

  events(): AsyncIterable<DomainEvent> {
    if (this.closed) throw new DriverError('InvalidState', `${this.name} driver: events() after close()`);
    return this.hub.subscribe();
  }

  async consoleEndpoint(ref: DomainRef): Promise<ConsoleEndpoint> {
    const { name, devices } = await this.liveDevices(ref);
    for (const s of [...(devices.serial ?? []), ...(devices.console ?? [])]) {
      const path = s.source?.['@_path'];
      if (s['@_type'] === 'unix' && path) return { kind: 'unix', path };
      if (s['@_type'] === 'pty' && (path || s['@_tty'])) return { kind: 'pty', path: path || s['@_tty'] };
    }
    throw new DriverError('NotFound', `domain ${name}: has no unix or pty serial console`);
  }

  async vncEndpoint(ref: DomainRef): Promise<VncEndpoint> {
    const { name, devices } = await this.liveDevices(ref);
    const g = (devices.graphics ?? []).find((x) => x['@_type'] === 'vnc');
    if (!g) throw new DriverError('NotFound', `domain ${name}: has no VNC graphics device`);
    const sock = g['@_socket'] ?? g.listen?.find((l) => l['@_type'] === 'socket')?.['@_socket'];
    if (sock) return { kind: 'unix', path: sock };
    const port = Number(g['@_port']);
    if (!(port > 0))
      throw new DriverError('InvalidState', `domain ${name}: VNC has no port yet (is it running?)`);
    return { kind: 'tcp', host: g['@_listen'] ?? '127.0.0.1', port };
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

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const s of this.streams) await s.close().catch(() => undefined);
    this.hub.close();
    await this.client.close();
  }

  private async liveDevices(ref: DomainRef): Promise<{ name: string; devices: LiveDevices }> {
    const dom = await this.mustLookup(ref);
    const text = await this.call(dom.name, 'read XML', () => this.client.domainGetXMLDesc(dom));
    const devices = xml.parse(text)?.domain?.devices ?? {};
    return { name: dom.name, devices };
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
    if (e instanceof DriverError) return e;
    const subject = name === 'host' ? `${this.name} driver` : `domain ${name}`;
    if (!(e instanceof LibvirtError)) {
      return new DriverError('Hypervisor', `${subject}: ${op} failed: ${(e as Error)?.message ?? e}`, {
        cause: e,
      });
    }
    let code: DriverErrorCode = 'Hypervisor';
    if (e.code === VIR_ERR_NO_DOMAIN) code = 'NotFound';
    else if (e.code === VIR_ERR_OPERATION_INVALID) code = 'InvalidState';
    else if (
      [
        VIR_ERR_NO_SUPPORT,
        VIR_ERR_OPERATION_UNSUPPORTED,
        VIR_ERR_CONFIG_UNSUPPORTED,
        VIR_ERR_ARGUMENT_UNSUPPORTED,
      ].includes(e.code)
    )
      code = 'Unsupported';
    else if (e.code === VIR_ERR_XML_ERROR || e.code === VIR_ERR_XML_DETAIL) code = 'Invalid';
    // virCheckFlags: this hypervisor driver does not implement a flag we passed.
    else if (e.code === VIR_ERR_INVALID_ARG && e.str2 === 'flags') code = 'Unsupported';
    return new DriverError(code, `${subject}: ${op} failed: ${e.message}`, { cause: e });
  }
}

/** The account QEMU runs as under the system daemon (Debian: `libvirt-qemu`), if it exists. */
async function qemuAccount(): Promise<{ uid: number; gid: number } | undefined> {
  try {
    const passwd = await readFile('/etc/passwd', 'utf8');
    const line = passwd.split('\n').find((l) => l.startsWith('libvirt-qemu:'));
    if (!line) return undefined;
    const [, , uid, gid] = line.split(':');
    return { uid: Number(uid), gid: Number(gid) };
  } catch {
    return undefined;
  }
}

/**
 * Creates the directories of the unix sockets QEMU binds (serial console, channels,
 * VNC), owned by QEMU's account when we run as root, so QEMU (not root under the
 * system daemon) can create its sockets there and nobody else can.
 */
export async function ensureSocketDirs(
  domain: Domain,
  qemuUser?: { uid: number; gid: number },
): Promise<void> {
  const d = domain.devices;
  const sources = [...(d.serial ?? []), ...(d.console ?? []), ...(d.channel ?? [])]
    .filter((c) => c.type === 'unix' && c.source?.mode === 'bind' && c.source.path)
    .map((c) => c.source?.path as string);
  for (const g of d.graphics ?? []) {
    if (g.socket) sources.push(g.socket);
    for (const l of g.listen ?? []) if (l.type === 'socket' && l.socket) sources.push(l.socket);
  }
  const dirs = new Set(sources.map((p) => dirname(p)));
  if (dirs.size === 0) return;
  const me = process.getuid?.() ?? 0;
  const owner = qemuUser
    ? qemuUser.uid === me
      ? undefined
      : qemuUser
    : me === 0
      ? await qemuAccount()
      : undefined;
  for (const dir of dirs) {
    await mkdir(dir, { recursive: true });
    if (owner) {
      await chown(dir, owner.uid, owner.gid);
      await chmod(dir, 0o700);
    }
  }
}
