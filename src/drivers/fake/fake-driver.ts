/**
 * The fake driver: deterministic, in memory, with configurable latency and injected
 * failures. It follows libvirt's state machine (what is allowed in which state, which
 * events fire) so the conformance suite holds it to the same rules as a real driver;
 * it is meant for unit tests and control-plane benchmarks.
 */
import type { VirtualMachineInstance } from '../../api';
import {
  type ConsoleEndpoint,
  type CpuHotplugSupport,
  type DiskHotplugSupport,
  type DomainEvent,
  type DomainInfo,
  type DomainRef,
  type DomainStats,
  domainName,
  type HostCapabilities,
  type HypervisorDriver,
  type MemoryDumpSupport,
  type MemoryHotplugSupport,
  type MigrationSupport,
  type NicHotplugSupport,
  refOf,
  type SevSupport,
  type ShutdownOptions,
  type SoftRebootOptions,
  type SyncOptions,
  type VncEndpoint,
} from '../driver';
import { DriverError } from '../errors';
import { fakeCpuHotplug } from './fake-cpu-hotplug';
import { FakeGuestAgent } from './fake-guest-agent';
import { type FakeDomain, FakeHost } from './fake-host';
import { fakeDiskHotplug } from './fake-hotplug';
import { fakeMemoryDump } from './fake-memory-dump';
import { fakeMemoryHotplug } from './fake-memory-hotplug';
import { type FakeMigrationBehaviour, fakeMigrationSupport } from './fake-migration';
import { fakeNicHotplug } from './fake-nic-hotplug';
import { fakeSevSupport } from './fake-sev';

/** Operations of the fake driver that can be delayed or made to fail. */
export type FakeOperation =
  | 'probe'
  | 'sync'
  | 'pause'
  | 'unpause'
  | 'shutdown'
  | 'kill'
  | 'reset'
  | 'softReboot'
  | 'delete'
  | 'getDomain'
  | 'listDomains'
  | 'getStats'
  | 'migration'
  | 'sev'
  | 'hotplug'
  | 'memoryDump'
  | 'cpuHotplug'
  | 'memoryHotplug'
  | 'nicHotplug';

/** Options of `FakeDriver`. */
export interface FakeDriverOptions {
  /** The host to run domains on; share one between instances to test adoption. */
  host?: FakeHost;
  /** Delay added to every operation, in milliseconds (0: resolve on the next tick). */
  latencyMs?: number;
  /** Whether guests honour a graceful shutdown (default true); if not, the grace period runs out and they are killed. */
  guestHonoursShutdown?: boolean;
  /** Memory overhead reported per VMI, bytes (default 16 MiB). */
  memoryOverheadBytes?: number;
  /** How outgoing live migrations behave (target hosts are found with `registerFakeHost`). */
  migration?: FakeMigrationBehaviour;
}

const MiB = 1024 * 1024;

/**
 * Deterministic `virsh domstats`-style keys for a fake domain: CPU time split evenly over
 * the vCPUs, resident memory = the guest's memory, one drive `vda` read once at boot.
 */
function fakeBulkStats(cpuTimeNs: number, memoryKiB: number, vcpus: number): Record<string, number | string> {
  const p: Record<string, number | string> = {
    'cpu.time': cpuTimeNs,
    'vcpu.current': vcpus,
    'vcpu.maximum': vcpus,
    'balloon.current': memoryKiB,
    'balloon.maximum': memoryKiB,
    'balloon.rss': memoryKiB,
    'block.count': 1,
    'block.0.name': 'vda',
    'block.0.rd.reqs': 16,
    'block.0.rd.bytes': 65_536,
    'net.count': 0,
  };
  for (let i = 0; i < vcpus; i++) {
    p[`vcpu.${i}.state`] = 1;
    p[`vcpu.${i}.time`] = Math.floor(cpuTimeNs / Math.max(1, vcpus));
  }
  return p;
}

/**
 * An in-memory `HypervisorDriver` on a `FakeHost`: domains, events, stats, the guest agent,
 * migration and SEV follow libvirt's rules, with optional latency (`latencyMs`) and
 * injected failures (`failNext`), for unit tests and benchmarks.
 */
export class FakeDriver implements HypervisorDriver {
  readonly name = 'fake';
  readonly host: FakeHost;
  private readonly latencyMs: number;
  private readonly failures = new Map<FakeOperation, Error[]>();
  private closed = false;

  /** Live migration to another fake host registered with `registerFakeHost`. */
  readonly migration: MigrationSupport;
  private readonly sevSupport: SevSupport;
  /** Volume hotplug (fake-hotplug.ts). */
  readonly hotplug: DiskHotplugSupport;
  /** Memory dumps (fake-memory-dump.ts). */
  readonly memoryDump: MemoryDumpSupport;
  /** CPU hotplug (fake-cpu-hotplug.ts). */
  readonly cpuHotplug: CpuHotplugSupport;
  /** Memory hotplug (fake-memory-hotplug.ts). */
  readonly memoryHotplug: MemoryHotplugSupport;
  /** NIC hotplug (fake-nic-hotplug.ts). */
  readonly nicHotplug: NicHotplugSupport;

  constructor(private readonly options: FakeDriverOptions = {}) {
    this.host = options.host ?? new FakeHost();
    this.latencyMs = options.latencyMs ?? 0;
    this.migration = fakeMigrationSupport(this.host, () => this.enter('migration'), options.migration);
    this.sevSupport = fakeSevSupport(this.host, () => this.enter('sev'));
    this.hotplug = fakeDiskHotplug(this.host, () => this.enter('hotplug'));
    this.memoryDump = fakeMemoryDump(this.host, () => this.enter('memoryDump'));
    this.cpuHotplug = fakeCpuHotplug(this.host, () => this.enter('cpuHotplug'));
    this.memoryHotplug = fakeMemoryHotplug(this.host, () => this.enter('memoryHotplug'));
    this.nicHotplug = fakeNicHotplug(this.host, () => this.enter('nicHotplug'));
  }

  /** SEV attestation; present only while the host's capabilities report SEV. */
  get sev(): SevSupport | undefined {
    return this.host.capabilities.sev?.sev ? this.sevSupport : undefined;
  }

  /**
   * Makes the next `times` calls of `op` reject with `error` (default: a
   * `DriverError` with code `Injected`).
   */
  failNext(op: FakeOperation, error?: Error, times = 1): void {
    const queue = this.failures.get(op) ?? [];
    for (let i = 0; i < times; i++) {
      queue.push(error ?? new DriverError('Injected', `fake driver: injected failure of ${op}`));
    }
    this.failures.set(op, queue);
  }

  async probe(): Promise<HostCapabilities> {
    await this.enter('probe');
    return structuredClone(this.host.capabilities);
  }

  async sync(vmi: VirtualMachineInstance, options: SyncOptions = {}): Promise<DomainInfo> {
    await this.enter('sync');
    const ref = refOf(vmi);
    const name = domainName(ref);
    const caps = this.host.capabilities;
    if (!caps.kvmUsable && !options.useEmulation) {
      throw new DriverError(
        'Unsupported',
        `VirtualMachineInstance ${ref.namespace}/${ref.name}: KVM is not usable on this host and software emulation is not allowed; set spec.configuration.developerConfiguration.useEmulation in the KubeVirt configuration`,
      );
    }
    let dom = this.host.domains.get(name);
    if (!dom) {
      const cpu = vmi.spec?.domain?.cpu;
      const vcpus = (cpu?.sockets ?? 1) * (cpu?.cores ?? 1) * (cpu?.threads ?? 1);
      dom = {
        vmi: structuredClone(vmi),
        boots: 0,
        cpuTimeNs: 0,
        info: {
          name,
          uuid: vmi.metadata?.uid || this.host.nextUuid(),
          state: 'shutoff',
          reason: 'unknown',
          vmi: ref,
          vcpus,
          memoryKiB: memoryKiBOf(vmi),
          bootId: '',
        },
      };
      this.host.domains.set(name, dom);
      this.host.emit({ type: 'defined', domain: name, updated: false });
    }
    if (dom.info.state === 'shutoff' || dom.info.state === 'crashed') {
      if (options.paused) return { ...dom.info };
      this.start(dom);
    }
    return { ...dom.info };
  }

  async pause(ref: DomainRef): Promise<void> {
    await this.enter('pause');
    const dom = this.mustGet(ref);
    this.requireActive(dom, 'pause');
    if (dom.info.state === 'paused') return;
    this.host.setState(dom, 'paused', 'user');
    this.host.emit({ type: 'paused', domain: dom.info.name, reason: 'user' });
  }

  async unpause(ref: DomainRef): Promise<void> {
    await this.enter('unpause');
    const dom = this.mustGet(ref);
    this.requireActive(dom, 'unpause');
    if (dom.info.state !== 'paused') return;
    this.host.setState(dom, 'running', 'unpaused');
    this.host.emit({ type: 'resumed', domain: dom.info.name, reason: 'unpaused' });
  }

  async shutdown(ref: DomainRef, options: ShutdownOptions): Promise<void> {
    await this.enter('shutdown');
    const dom = this.mustGet(ref);
    this.requireActive(dom, 'shutdown');
    if (this.options.guestHonoursShutdown ?? true) {
      this.host.emit({ type: 'shutdown', domain: dom.info.name, reason: 'guest' });
      this.stop(dom, 'shutdown');
      return;
    }
    if (options.graceSeconds > 0) {
      await new Promise((r) => setTimeout(r, options.graceSeconds * 1000));
    }
    if (dom.info.state !== 'shutoff') this.stop(dom, 'destroyed');
  }

  async kill(ref: DomainRef): Promise<void> {
    await this.enter('kill');
    const dom = this.mustGet(ref);
    this.requireActive(dom, 'kill');
    this.stop(dom, 'destroyed');
  }

  async reset(ref: DomainRef): Promise<void> {
    await this.enter('reset');
    const dom = this.mustGet(ref);
    this.requireActive(dom, 'reset');
    this.host.emit({ type: 'rebooted', domain: dom.info.name });
  }

  async softReboot(ref: DomainRef, options?: SoftRebootOptions): Promise<void> {
    await this.enter('softReboot');
    const dom = this.mustGet(ref);
    this.requireActive(dom, 'softReboot');
    dom.softReboots = [...(dom.softReboots ?? []), options?.via ?? 'acpi'];
    this.host.emit({ type: 'rebooted', domain: dom.info.name });
  }

  async delete(ref: DomainRef): Promise<void> {
    await this.enter('delete');
    const name = domainName(ref);
    const dom = this.host.domains.get(name);
    if (!dom) return;
    if (isActive(dom)) this.stop(dom, 'destroyed');
    this.host.domains.delete(name);
    this.host.emit({ type: 'undefined', domain: name });
  }

  async getDomain(ref: DomainRef): Promise<DomainInfo | undefined> {
    await this.enter('getDomain');
    const dom = this.host.domains.get(domainName(ref));
    return dom ? { ...dom.info } : undefined;
  }

  async listDomains(): Promise<DomainInfo[]> {
    await this.enter('listDomains');
    return [...this.host.domains.values()].map((d) => ({ ...d.info }));
  }

  async getStats(ref: DomainRef): Promise<DomainStats> {
    await this.enter('getStats');
    const dom = this.mustGet(ref);
    // Deterministic "CPU time": grows by 1 ms of CPU per query while running.
    if (dom.info.state === 'running') dom.cpuTimeNs += 1_000_000;
    return {
      name: dom.info.name,
      cpuTimeNs: dom.cpuTimeNs,
      memoryKiB: isActive(dom) ? dom.info.memoryKiB : 0,
      vcpus: dom.info.vcpus,
      params: fakeBulkStats(dom.cpuTimeNs, dom.info.memoryKiB, dom.info.vcpus),
    };
  }

  events(): AsyncIterable<DomainEvent> {
    if (this.closed) throw new DriverError('InvalidState', 'fake driver: events() after close()');
    return this.host.events.subscribe();
  }

  async consoleEndpoint(ref: DomainRef): Promise<ConsoleEndpoint> {
    this.mustGet(ref);
    return { kind: 'memory' };
  }

  async vncEndpoint(ref: DomainRef): Promise<VncEndpoint> {
    const dom = this.mustGet(ref);
    return { kind: 'unix', path: `/fake/vnc/${dom.info.uuid}` };
  }

  private agent: FakeGuestAgent | undefined;
  /** The guest agent: absent in every guest until a test connects it (`guestAgent.connect(ref)`). */
  get guestAgent(): FakeGuestAgent {
    this.agent ??= new FakeGuestAgent(this.host);
    return this.agent;
  }

  memoryOverhead(_vmi: VirtualMachineInstance): number {
    return this.options.memoryOverheadBytes ?? 16 * MiB;
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private start(dom: FakeDomain): void {
    dom.boots++;
    dom.info = {
      ...dom.info,
      state: 'running',
      reason: 'booted',
      bootId: `${dom.info.uuid}/${dom.boots}`,
    };
    this.host.emit({ type: 'started', domain: dom.info.name, reason: 'booted' });
  }

  private stop(dom: FakeDomain, reason: string): void {
    this.host.setState(dom, 'shutoff', reason);
    this.host.emit({ type: 'stopped', domain: dom.info.name, reason });
  }

  private async enter(op: FakeOperation): Promise<void> {
    if (this.closed) throw new DriverError('InvalidState', `fake driver: ${op} after close()`);
    await new Promise((r) => setTimeout(r, this.latencyMs));
    const queue = this.failures.get(op);
    const err = queue?.shift();
    if (err) throw err;
  }

  private mustGet(ref: DomainRef): FakeDomain {
    const dom = this.host.domains.get(domainName(ref));
    if (!dom) {
      throw new DriverError(
        'NotFound',
        `VirtualMachineInstance ${ref.namespace}/${ref.name}: no domain ${domainName(ref)} on this host`,
      );
    }
    return dom;
  }

  private requireActive(dom: FakeDomain, op: string): void {
    if (!isActive(dom)) {
      throw new DriverError(
        'InvalidState',
        `domain ${dom.info.name}: cannot ${op}, it is ${dom.info.state} (start it first)`,
      );
    }
  }
}

function isActive(dom: FakeDomain): boolean {
  return dom.info.state !== 'shutoff' && dom.info.state !== 'crashed';
}

/** Guest memory of a VMI in KiB, from `spec.domain.memory.guest` or the memory request. */
function memoryKiBOf(vmi: VirtualMachineInstance): number {
  const q = vmi.spec?.domain?.memory?.guest ?? vmi.spec?.domain?.resources?.requests?.memory ?? '64Mi';
  return Math.floor(parseQuantityBytes(String(q)) / 1024);
}

const SUFFIX: Record<string, number> = {
  '': 1,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  Ki: 1024,
  Mi: 1024 ** 2,
  Gi: 1024 ** 3,
  Ti: 1024 ** 4,
};

function parseQuantityBytes(q: string): number {
  const m = /^(\d+(?:\.\d+)?)([kMGT]i?|Ki)?$/.exec(q.trim());
  if (!m) throw new DriverError('Invalid', `memory quantity ${JSON.stringify(q)} is not valid`);
  return Number(m[1]) * (SUFFIX[m[2] ?? ''] ?? 1);
}
