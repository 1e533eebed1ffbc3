/**
 * `LibvirtClient`: typed async methods over libvirt's remote protocol, spoken directly on
 * libvirtd's unix socket (no native addon). Opens a connection URI (`qemu:///system`,
 * `test:///default`, ...) through the daemon, delivers domain events as async streams,
 * keeps the connection alive and, when asked, reconnects after the daemon restarts.
 */

import {
  type ClientState,
  type LibvirtClientOptions,
  MigrateFlags,
  type ReconnectOptions,
  VIR_CONNECT_RO,
} from './client-options';
import {
  AUTH_NAMES,
  agentCallTimeout,
  checkText,
  type DomainEventKind,
  EVENT_IDS,
  EVENT_READERS,
  type EventOf,
  MAX_ORPHAN_BYTES,
  MAX_ORPHAN_EVENTS,
  PROC_NAMES,
  QEMU_PROC_NAMES,
  type Subscription,
} from './client-tables';
import { DomainConsole } from './console';
import {
  LibvirtConnectionError,
  LibvirtError,
  VIR_ERR_AUTH_FAILED,
  VIR_ERR_ERROR,
  VIR_ERR_INVALID_ARG,
  VIR_FROM_REMOTE,
} from './errors';
import { EventStream } from './events';
import {
  QEMU_PROGRAM,
  QEMU_PROTOCOL_VERSION,
  QemuProc,
  REMOTE_AUTH_NONE,
  REMOTE_DOMAIN_JOB_STATS_MAX,
  REMOTE_DOMAIN_LAUNCH_SECURITY_INFO_PARAMS_MAX,
  REMOTE_DOMAIN_LAUNCH_SECURITY_STATE_PARAMS_MAX,
  REMOTE_DOMAIN_LIST_MAX,
  REMOTE_DOMAIN_MIGRATE_PARAM_LIST_MAX,
  REMOTE_MIGRATE_COOKIE_MAX,
  REMOTE_NODE_SEV_INFO_MAX,
  REMOTE_PROGRAM,
  REMOTE_PROTOCOL_VERSION,
  RemoteProc,
  VIR_DRV_FEATURE_PROGRAM_KEEPALIVE,
  VIR_UUID_BUFLEN,
} from './protocol/constants';
import type { Message } from './protocol/packet';
import {
  type BlockStats,
  type DomainEvent,
  type DomainInfo,
  type DomainJobInfo,
  type DomainStateInfo,
  type DomainStatsRecord,
  type InterfaceStats,
  type MemoryStat,
  type NodeInfo,
  readAuthList,
  readBlockStats,
  readDomainInfo,
  readDomainList,
  readDomainStats,
  readInterfaceStats,
  readJobInfo,
  readMemoryStats,
  readNodeInfo,
} from './protocol/remote';
import {
  type DomainRef,
  readDomain,
  readOptString,
  readString,
  readTypedParams,
  type TypedParam,
  uuidToBytes,
  writeDomain,
  writeOptString,
  writeString,
  writeTypedParams,
} from './protocol/types';
import { DEFAULT_CALL_TIMEOUT_MS, DEFAULT_SOCKET_PATH, RpcTransport } from './transport';
import { XdrReader, type XdrWriter } from './xdr';

export {
  AffectFlags,
  type ClientState,
  CreateFlags,
  DestroyFlags,
  DomainXMLFlags,
  type LibvirtClientOptions,
  ListDomainsFlags,
  MigrateFlags,
  type ReconnectOptions,
  UndefineFlags,
  VIR_CONNECT_RO,
} from './client-options';
export type { DomainEventKind } from './client-tables';

/**
 * A connection to libvirt through the daemon's unix socket.
 *
 * ```ts
 * const c = await LibvirtClient.connect({ uri: 'qemu:///system' });
 * const dom = await c.domainDefineXML(xml);
 * await c.domainCreate(dom);
 * for await (const ev of await c.domainEvents('lifecycle', dom)) console.log(ev.eventName);
 * await c.close();
 * ```
 */
export class LibvirtClient {
  private transport: RpcTransport;
  private state: ClientState = 'open';
  private reconnecting: Promise<void> | null = null;
  private finalError: LibvirtError | null = null;
  private readonly subs = new Set<Subscription>();
  private orphanEvents: Array<{ callbackId: number; ev: DomainEvent; bytes: number }> = [];
  private orphanBytes = 0;
  private readonly stateListeners: Array<(s: ClientState, err?: LibvirtError) => void> = [];

  private constructor(
    transport: RpcTransport,
    private readonly opts: Required<Pick<LibvirtClientOptions, 'uri' | 'socketPath'>> & LibvirtClientOptions,
  ) {
    this.transport = transport;
    this.attach(transport);
  }

  /**
   * Connects to the daemon, checks that no authentication is required (root over the unix
   * socket), and opens `uri`. Fails with `LibvirtConnectionError` when the socket cannot
   * be reached and with `LibvirtError` code `VIR_ERR_AUTH_FAILED` when the daemon demands
   * SASL or polkit, which this client does not speak.
   */
  static async connect(opts: LibvirtClientOptions = {}): Promise<LibvirtClient> {
    const full = {
      ...opts,
      uri: opts.uri ?? 'qemu:///system',
      socketPath: opts.socketPath ?? DEFAULT_SOCKET_PATH,
    };
    checkText('uri', full.uri);
    const transport = await LibvirtClient.openTransport(full);
    return new LibvirtClient(transport, full);
  }

  private static async openTransport(opts: LibvirtClientOptions & { uri: string; socketPath: string }) {
    const t = await RpcTransport.connect({
      socketPath: opts.socketPath,
      connectTimeoutMs: opts.connectTimeoutMs,
      keepalive: opts.keepalive,
      callTimeoutMs: opts.callTimeoutMs,
    });
    try {
      const auth = await t.call(
        REMOTE_PROGRAM,
        REMOTE_PROTOCOL_VERSION,
        RemoteProc.AUTH_LIST,
        undefined,
        readAuthList,
      );
      if (auth.length > 0 && !auth.includes(REMOTE_AUTH_NONE)) {
        const names = auth.map((a) => AUTH_NAMES[a] ?? `type ${a}`).join(', ');
        throw new LibvirtError({
          code: VIR_ERR_AUTH_FAILED,
          domain: VIR_FROM_REMOTE,
          level: VIR_ERR_ERROR,
          message: `libvirt at ${opts.socketPath} requires authentication (${names}); this client supports only unauthenticated unix-socket access (connect as root, or configure auth_unix_rw = "none")`,
        });
      }
      // Tell the daemon we speak keepalive, so it probes us too and notices a dead client.
      await t.call(
        REMOTE_PROGRAM,
        REMOTE_PROTOCOL_VERSION,
        RemoteProc.CONNECT_SUPPORTS_FEATURE,
        (w) => w.int(VIR_DRV_FEATURE_PROGRAM_KEEPALIVE),
        (r) => r.int(),
      );
      await t.call(REMOTE_PROGRAM, REMOTE_PROTOCOL_VERSION, RemoteProc.CONNECT_OPEN, (w) => {
        writeOptString(w, opts.uri);
        w.uint(opts.readOnly ? VIR_CONNECT_RO : 0);
      });
      return t;
    } catch (e) {
      t.close();
      throw e;
    }
  }

  private attach(t: RpcTransport): void {
    t.onMessage((m) => this.onMessage(m));
    t.onClose((err) => this.onTransportClosed(t, err));
  }

  /** The URI this client opened. */
  get uri(): string {
    return this.opts.uri;
  }

  /** `open`, `reconnecting` or `closed`. */
  get connectionState(): ClientState {
    return this.state;
  }

  /** Calls currently waiting for a reply. */
  get inFlight(): number {
    return this.transport.inFlight;
  }

  /** Registers a listener for connection state changes (lost, reconnected, closed). */
  onStateChange(fn: (state: ClientState, err?: LibvirtError) => void): void {
    this.stateListeners.push(fn);
  }

  private setState(s: ClientState, err?: LibvirtError): void {
    this.state = s;
    for (const fn of this.stateListeners) fn(s, err);
  }

  private reconnectPolicy(): Required<ReconnectOptions> | null {
    const r = this.opts.reconnect;
    if (!r) return null;
    const o = r === true ? {} : r;
    return {
      initialDelayMs: o.initialDelayMs ?? 100,
      maxDelayMs: o.maxDelayMs ?? 5000,
      maxAttempts: o.maxAttempts ?? 20,
    };
  }

  private onTransportClosed(t: RpcTransport, err: LibvirtConnectionError): void {
    // While reconnecting, the loop itself handles a transport that dies mid-way.
    if (t !== this.transport || this.state !== 'open') return;
    for (const s of this.subs) s.callbackId = -1;
    const policy = this.reconnectPolicy();
    if (err.reason === 'client-closed' || !policy) {
      this.shutdown(err);
      return;
    }
    this.setState('reconnecting', err);
    this.reconnecting = this.reconnectLoop(policy, err).finally(() => {
      this.reconnecting = null;
    });
    // Failures are reported through state and to callers waiting on `ready()`.
    this.reconnecting.catch(() => {});
  }

  private async reconnectLoop(policy: Required<ReconnectOptions>, cause: LibvirtError): Promise<void> {
    let delay = policy.initialDelayMs;
    let last: unknown = cause;
    for (let attempt = 1; attempt <= policy.maxAttempts; attempt++) {
      await new Promise((r) => setTimeout(r, delay));
      if (this.isClosed()) throw this.finalError ?? cause;
      let t: RpcTransport;
      try {
        t = await LibvirtClient.openTransport(this.opts);
      } catch (e) {
        last = e;
        delay = Math.min(delay * 2, policy.maxDelayMs);
        continue;
      }
      if (this.isClosed()) {
        t.close();
        throw this.finalError ?? cause;
      }
      try {
        this.transport = t;
        this.attach(t);
        await this.resubscribe(t);
        // A connection that died while resubscribing is not a reconnection.
        if (!t.isOpen)
          throw new LibvirtConnectionError('closed', 'connection lost again while resubscribing');
        this.setState('open');
        return;
      } catch (e) {
        t.close();
        last = e;
        delay = Math.min(delay * 2, policy.maxDelayMs);
      }
    }
    const err = new LibvirtConnectionError(
      'closed',
      `lost the libvirt connection to ${this.opts.socketPath} (${cause.message}) and could not reconnect after ${policy.maxAttempts} attempts: ${(last as Error)?.message ?? last}`,
      { cause: last },
    );
    this.shutdown(err);
    throw err;
  }

  private isClosed(): boolean {
    return this.state === 'closed';
  }

  private shutdown(err: LibvirtError): void {
    if (this.state === 'closed') return;
    this.finalError = err;
    for (const s of this.subs) {
      if (err instanceof LibvirtConnectionError && err.reason === 'client-closed') s.stream.end();
      else s.stream.fail(err);
    }
    this.subs.clear();
    this.setState('closed', err);
  }

  /** Resolves when the client is usable; waits for a reconnection in progress. */
  private async ready(): Promise<RpcTransport> {
    if (this.state === 'closed')
      throw this.finalError ?? new LibvirtConnectionError('client-closed', 'client closed');
    if (this.reconnecting) await this.reconnecting;
    return this.transport;
  }

  private async rpc<T>(
    procedure: number,
    encode?: (w: XdrWriter) => void,
    decode?: (r: XdrReader) => T,
    timeoutMs?: number,
  ): Promise<T> {
    const t = this.state === 'open' ? this.transport : await this.ready();
    return t.call(
      REMOTE_PROGRAM,
      REMOTE_PROTOCOL_VERSION,
      procedure,
      encode,
      decode,
      undefined,
      PROC_NAMES[procedure],
      timeoutMs,
    );
  }

  private async qemuRpc<T>(
    procedure: number,
    encode: (w: XdrWriter) => void,
    decode: (r: XdrReader) => T,
    timeoutMs?: number,
  ): Promise<T> {
    const t = this.state === 'open' ? this.transport : await this.ready();
    return t.call(
      QEMU_PROGRAM,
      QEMU_PROTOCOL_VERSION,
      procedure,
      encode,
      decode,
      undefined,
      QEMU_PROC_NAMES[procedure],
      timeoutMs,
    );
  }

  /** Closes the libvirt connection (CONNECT_CLOSE) and the socket. Idempotent. */
  async close(): Promise<void> {
    if (this.state === 'closed') return;
    const t = this.transport;
    const err = new LibvirtConnectionError('client-closed', 'libvirt client closed');
    this.shutdown(err);
    if (t.isOpen) {
      try {
        await Promise.race([
          t.call(REMOTE_PROGRAM, REMOTE_PROTOCOL_VERSION, RemoteProc.CONNECT_CLOSE),
          new Promise((r) => setTimeout(r, 2000).unref()),
        ]);
      } catch {
        // The daemon may already be gone; closing the socket is what matters.
      }
    }
    t.close();
  }

  // ---- connection and host ----

  /** Hypervisor version as libvirt encodes it (major * 1e6 + minor * 1e3 + micro). */
  async getVersion(): Promise<number> {
    return this.rpc(RemoteProc.CONNECT_GET_VERSION, undefined, (r) => r.uhyperNumber());
  }

  /** libvirt library version of the daemon (major * 1e6 + minor * 1e3 + micro). */
  async getLibVersion(): Promise<number> {
    return this.rpc(RemoteProc.CONNECT_GET_LIB_VERSION, undefined, (r) => r.uhyperNumber());
  }

  /** Driver name, e.g. `QEMU` or `Test`. */
  async getType(): Promise<string> {
    return this.rpc(RemoteProc.CONNECT_GET_TYPE, undefined, readString);
  }

  /** The canonical URI of the opened connection. */
  async getURI(): Promise<string> {
    return this.rpc(RemoteProc.CONNECT_GET_URI, undefined, readString);
  }

  async getHostname(): Promise<string> {
    return this.rpc(RemoteProc.CONNECT_GET_HOSTNAME, undefined, readString);
  }

  /** Host capabilities XML (`virsh capabilities`). */
  async getCapabilities(): Promise<string> {
    return this.rpc(RemoteProc.CONNECT_GET_CAPABILITIES, undefined, readString);
  }

  /** Domain capabilities XML (`virsh domcapabilities`); every selector is optional. */
  async getDomainCapabilities(
    opts: { emulatorBin?: string; arch?: string; machine?: string; virtType?: string; flags?: number } = {},
  ): Promise<string> {
    for (const [k, v] of Object.entries(opts)) if (typeof v === 'string') checkText(k, v);
    return this.rpc(
      RemoteProc.CONNECT_GET_DOMAIN_CAPABILITIES,
      (w) => {
        writeOptString(w, opts.emulatorBin);
        writeOptString(w, opts.arch);
        writeOptString(w, opts.machine);
        writeOptString(w, opts.virtType);
        w.uint(opts.flags ?? 0, 'flags');
      },
      readString,
    );
  }

  async nodeGetInfo(): Promise<NodeInfo> {
    return this.rpc(RemoteProc.NODE_GET_INFO, undefined, readNodeInfo);
  }

  /** AMD SEV platform data (pdh, cert-chain, cbitpos, ...); fails on hosts without SEV. */
  async nodeGetSEVInfo(flags = 0): Promise<TypedParam[]> {
    return this.rpc(
      RemoteProc.NODE_GET_SEV_INFO,
      (w) => w.int(0).uint(flags, 'flags'),
      (r) => {
        const params = readTypedParams(r, REMOTE_NODE_SEV_INFO_MAX);
        r.int(); // nparams
        return params;
      },
    );
  }

  /** All domains matching `flags` (ListDomainsFlags; 0 = all). */
  async listAllDomains(flags = 0): Promise<DomainRef[]> {
    return this.rpc(
      RemoteProc.CONNECT_LIST_ALL_DOMAINS,
      (w) => w.int(1).uint(flags, 'flags'),
      readDomainList,
    );
  }

  /**
   * Bulk statistics (`virsh domstats`): `stats` selects groups (virDomainStatsTypes, 0 =
   * all), `doms` restricts to given domains (empty = all, filtered by `flags`).
   */
  async getAllDomainStats(doms: DomainRef[] = [], stats = 0, flags = 0): Promise<DomainStatsRecord[]> {
    return this.rpc(
      RemoteProc.CONNECT_GET_ALL_DOMAIN_STATS,
      (w) => {
        w.array(doms, REMOTE_DOMAIN_LIST_MAX, writeDomain);
        w.uint(stats, 'stats').uint(flags, 'flags');
      },
      readDomainStats,
    );
  }

  // ---- domain lifecycle ----

  /** Defines (or redefines) a persistent domain from XML. */
  async domainDefineXML(xml: string, flags = 0): Promise<DomainRef> {
    checkText('domain XML', xml);
    return this.rpc(
      RemoteProc.DOMAIN_DEFINE_XML_FLAGS,
      (w) => {
        writeString(w, xml);
        w.uint(flags, 'flags');
      },
      readDomain,
    );
  }

  /** Removes a domain's persistent definition (UndefineFlags). */
  async domainUndefine(dom: DomainRef, flags = 0): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_UNDEFINE_FLAGS, (w) => {
      writeDomain(w, dom);
      w.uint(flags, 'flags');
    });
  }

  /** Starts a defined domain (CreateFlags); returns it with its new id. */
  async domainCreate(dom: DomainRef, flags = 0): Promise<DomainRef> {
    return this.rpc(
      RemoteProc.DOMAIN_CREATE_WITH_FLAGS,
      (w) => {
        writeDomain(w, dom);
        w.uint(flags, 'flags');
      },
      readDomain,
    );
  }

  /** Creates and starts a transient domain from XML. */
  async domainCreateXML(xml: string, flags = 0): Promise<DomainRef> {
    checkText('domain XML', xml);
    return this.rpc(
      RemoteProc.DOMAIN_CREATE_XML,
      (w) => {
        writeString(w, xml);
        w.uint(flags, 'flags');
      },
      readDomain,
    );
  }

  /** Finds a domain by name; rejects with code 42 (`VIR_ERR_NO_DOMAIN`) when absent. */
  async domainLookupByName(name: string): Promise<DomainRef> {
    checkText('domain name', name);
    return this.rpc(RemoteProc.DOMAIN_LOOKUP_BY_NAME, (w) => writeString(w, name), readDomain);
  }

  /** Finds a domain by UUID; rejects with code 42 when absent. */
  async domainLookupByUUID(uuid: string): Promise<DomainRef> {
    const bytes = uuidToBytes(uuid);
    return this.rpc(
      RemoteProc.DOMAIN_LOOKUP_BY_UUID,
      (w) => w.fixedOpaque(bytes, VIR_UUID_BUFLEN),
      readDomain,
    );
  }

  /** Finds a running domain by id. */
  async domainLookupByID(id: number): Promise<DomainRef> {
    return this.rpc(RemoteProc.DOMAIN_LOOKUP_BY_ID, (w) => w.int(id, 'id'), readDomain);
  }

  /** Domain XML (DomainXMLFlags). */
  async domainGetXMLDesc(dom: DomainRef, flags = 0): Promise<string> {
    return this.rpc(
      RemoteProc.DOMAIN_GET_XML_DESC,
      (w) => {
        writeDomain(w, dom);
        w.uint(flags, 'flags');
      },
      readString,
    );
  }

  async domainGetInfo(dom: DomainRef): Promise<DomainInfo> {
    return this.rpc(RemoteProc.DOMAIN_GET_INFO, (w) => writeDomain(w, dom), readDomainInfo);
  }

  /** State (virDomainState, see `DomainState`) and reason. */
  async domainGetState(dom: DomainRef, flags = 0): Promise<DomainStateInfo> {
    return this.rpc(
      RemoteProc.DOMAIN_GET_STATE,
      (w) => {
        writeDomain(w, dom);
        w.uint(flags, 'flags');
      },
      (r) => ({ state: r.int(), reason: r.int() }),
    );
  }

  async domainIsActive(dom: DomainRef): Promise<boolean> {
    return this.rpc(
      RemoteProc.DOMAIN_IS_ACTIVE,
      (w) => writeDomain(w, dom),
      (r) => r.int() !== 0,
    );
  }

  /** Hard stop (DestroyFlags). */
  async domainDestroy(dom: DomainRef, flags = 0): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_DESTROY_FLAGS, (w) => {
      writeDomain(w, dom);
      w.uint(flags, 'flags');
    });
  }

  /** Asks the guest to shut down (ACPI or agent, per flags). */
  async domainShutdown(dom: DomainRef, flags = 0): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_SHUTDOWN_FLAGS, (w) => {
      writeDomain(w, dom);
      w.uint(flags, 'flags');
    });
  }

  async domainReboot(dom: DomainRef, flags = 0): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_REBOOT, (w) => {
      writeDomain(w, dom);
      w.uint(flags, 'flags');
    });
  }

  /** Hard reset, like pressing the reset button. */
  async domainReset(dom: DomainRef, flags = 0): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_RESET, (w) => {
      writeDomain(w, dom);
      w.uint(flags, 'flags');
    });
  }

  async domainSuspend(dom: DomainRef): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_SUSPEND, (w) => writeDomain(w, dom));
  }

  async domainResume(dom: DomainRef): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_RESUME, (w) => writeDomain(w, dom));
  }

  /** Sets memory in KiB (AffectFlags). */
  async domainSetMemory(dom: DomainRef, memoryKiB: number, flags = 0): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_SET_MEMORY_FLAGS, (w) => {
      writeDomain(w, dom);
      w.uhyper(memoryKiB, 'memoryKiB');
      w.uint(flags, 'flags');
    });
  }

  /** Sets the vCPU count (AffectFlags, plus 4 = MAXIMUM, 8 = GUEST). */
  async domainSetVcpus(dom: DomainRef, nvcpus: number, flags = 0): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_SET_VCPUS_FLAGS, (w) => {
      writeDomain(w, dom);
      w.uint(nvcpus, 'nvcpus');
      w.uint(flags, 'flags');
    });
  }

  private async deviceOp(proc: number, dom: DomainRef, xml: string, flags: number): Promise<void> {
    checkText('device XML', xml);
    await this.rpc(proc, (w) => {
      writeDomain(w, dom);
      writeString(w, xml);
      w.uint(flags, 'flags');
    });
  }

  /** Hot-plugs (or adds to the config) a device given as XML (AffectFlags). */
  async domainAttachDevice(dom: DomainRef, xml: string, flags = 0): Promise<void> {
    await this.deviceOp(RemoteProc.DOMAIN_ATTACH_DEVICE_FLAGS, dom, xml, flags);
  }

  /** Unplugs a device given as XML; completion arrives as a `device-removed` event. */
  async domainDetachDevice(dom: DomainRef, xml: string, flags = 0): Promise<void> {
    await this.deviceOp(RemoteProc.DOMAIN_DETACH_DEVICE_FLAGS, dom, xml, flags);
  }

  /** Changes a device in place (e.g. media change) (AffectFlags). */
  async domainUpdateDevice(dom: DomainRef, xml: string, flags = 0): Promise<void> {
    await this.deviceOp(RemoteProc.DOMAIN_UPDATE_DEVICE_FLAGS, dom, xml, flags);
  }

  // ---- statistics and jobs ----

  /** Balloon/memory statistics (virDomainMemoryStatTags). */
  async domainMemoryStats(dom: DomainRef, maxStats = 16, flags = 0): Promise<MemoryStat[]> {
    return this.rpc(
      RemoteProc.DOMAIN_MEMORY_STATS,
      (w) => {
        writeDomain(w, dom);
        w.uint(maxStats, 'maxStats');
        w.uint(flags, 'flags');
      },
      readMemoryStats,
    );
  }

  /** Block device counters for a disk target (e.g. `vda`) or source path. */
  async domainBlockStats(dom: DomainRef, disk: string): Promise<BlockStats> {
    checkText('disk', disk);
    return this.rpc(
      RemoteProc.DOMAIN_BLOCK_STATS,
      (w) => {
        writeDomain(w, dom);
        writeString(w, disk);
      },
      readBlockStats,
    );
  }

  /** Interface counters for a host-side device name or MAC. */
  async domainInterfaceStats(dom: DomainRef, device: string): Promise<InterfaceStats> {
    checkText('interface', device);
    return this.rpc(
      RemoteProc.DOMAIN_INTERFACE_STATS,
      (w) => {
        writeDomain(w, dom);
        writeString(w, device);
      },
      readInterfaceStats,
    );
  }

  async domainGetJobInfo(dom: DomainRef): Promise<DomainJobInfo> {
    return this.rpc(RemoteProc.DOMAIN_GET_JOB_INFO, (w) => writeDomain(w, dom), readJobInfo);
  }

  /**
   * Statistics of the domain's current job (or, with flags = 1 `COMPLETED`, the last one):
   * `type` is virDomainJobType; `params` hold e.g. `memory_processed`, `time_elapsed`.
   */
  async domainGetJobStats(dom: DomainRef, flags = 0): Promise<{ type: number; params: TypedParam[] }> {
    return this.rpc(
      RemoteProc.DOMAIN_GET_JOB_STATS,
      (w) => {
        writeDomain(w, dom);
        w.uint(flags, 'flags');
      },
      (r) => ({ type: r.int(), params: readTypedParams(r, REMOTE_DOMAIN_JOB_STATS_MAX) }),
    );
  }

  async domainAbortJob(dom: DomainRef): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_ABORT_JOB, (w) => writeDomain(w, dom));
  }

  /**
   * Peer-to-peer migration with typed parameters (virDomainMigrateToURI3 with
   * VIR_MIGRATE_PEER2PEER): the source daemon connects to `destUri` itself. The call
   * returns when the migration has finished.
   */
  async domainMigrateToURI3(
    dom: DomainRef,
    destUri: string,
    params: TypedParam[],
    flags: number,
  ): Promise<void> {
    checkText('destination URI', destUri);
    if ((flags & MigrateFlags.PEER2PEER) === 0) {
      throw new LibvirtError({
        code: VIR_ERR_INVALID_ARG,
        domain: VIR_FROM_REMOTE,
        level: VIR_ERR_ERROR,
        message: 'domainMigrateToURI3: only peer-to-peer migration is supported; set MigrateFlags.PEER2PEER',
      });
    }
    await this.rpc(
      RemoteProc.DOMAIN_MIGRATE_PERFORM3_PARAMS,
      (w) => {
        writeDomain(w, dom);
        writeOptString(w, destUri);
        writeTypedParams(w, params, REMOTE_DOMAIN_MIGRATE_PARAM_LIST_MAX);
        w.opaque(Buffer.alloc(0), REMOTE_MIGRATE_COOKIE_MAX);
        w.uint(flags, 'flags');
      },
      (r) => r.opaque(REMOTE_MIGRATE_COOKIE_MAX),
      0, // returns when the migration ends, however long that takes
    );
  }

  // ---- console ----

  /**
   * Opens a domain's console (`devName` e.g. `serial0`; null for the first console) as a
   * stream: iterate it for output, `write` for input, `close` to hang up. Flags:
   * `ConsoleFlags.FORCE` takes over a console another client holds.
   */
  async domainOpenConsole(dom: DomainRef, devName: string | null = null, flags = 0): Promise<DomainConsole> {
    if (devName !== null) checkText('console device name', devName);
    const t = this.state === 'open' ? this.transport : await this.ready();
    const con = new DomainConsole(t);
    await t.call(
      REMOTE_PROGRAM,
      REMOTE_PROTOCOL_VERSION,
      RemoteProc.DOMAIN_OPEN_CONSOLE,
      (w) => {
        writeDomain(w, dom);
        writeOptString(w, devName);
        w.uint(flags, 'flags');
      },
      undefined,
      con.handler,
    );
    return con;
  }

  // ---- QEMU-specific ----

  /** Runs a QEMU monitor command (QMP JSON, or HMP with flags = 1) and returns the reply text. */
  async qemuMonitorCommand(dom: DomainRef, cmd: string, flags = 0): Promise<string> {
    checkText('monitor command', cmd);
    return this.qemuRpc(
      QemuProc.DOMAIN_MONITOR_COMMAND,
      (w) => {
        writeDomain(w, dom);
        writeString(w, cmd);
        w.uint(flags, 'flags');
      },
      readString,
    );
  }

  /**
   * Runs a guest-agent command (JSON) and returns the reply; `timeoutSec` is -1 for
   * libvirt's default, -2 to block until the agent answers, 0 not to wait, or seconds
   * (libvirt's VIR_DOMAIN_QEMU_AGENT_COMMAND_DEFAULT, _BLOCK, _NOWAIT).
   */
  async qemuAgentCommand(dom: DomainRef, cmd: string, timeoutSec = -1, flags = 0): Promise<string | null> {
    checkText('agent command', cmd);
    return this.qemuRpc(
      QemuProc.DOMAIN_AGENT_COMMAND,
      (w) => {
        writeDomain(w, dom);
        writeString(w, cmd);
        w.int(timeoutSec, 'timeoutSec');
        w.uint(flags, 'flags');
      },
      readOptString,
      // Blocking (-2) waits for the agent without limit; a timeout in seconds extends ours.
      agentCallTimeout(this.opts.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS, timeoutSec),
    );
  }

  // ---- launch security (SEV) ----

  /** Launch-security data of a running domain (e.g. `sev-measurement`). */
  async domainGetLaunchSecurityInfo(dom: DomainRef, flags = 0): Promise<TypedParam[]> {
    return this.rpc(
      RemoteProc.DOMAIN_GET_LAUNCH_SECURITY_INFO,
      (w) => {
        writeDomain(w, dom);
        w.uint(flags, 'flags');
      },
      (r) => readTypedParams(r, REMOTE_DOMAIN_LAUNCH_SECURITY_INFO_PARAMS_MAX),
    );
  }

  /** Injects a launch secret (`sev-secret`, `sev-secret-header`, ...) into a paused SEV domain. */
  async domainSetLaunchSecurityState(dom: DomainRef, params: TypedParam[], flags = 0): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_SET_LAUNCH_SECURITY_STATE, (w) => {
      writeDomain(w, dom);
      writeTypedParams(w, params, REMOTE_DOMAIN_LAUNCH_SECURITY_STATE_PARAMS_MAX);
      w.uint(flags, 'flags');
    });
  }

  // ---- events ----

  /**
   * Subscribes to domain events of one kind, for one domain or (without `dom`) all. The
   * returned stream is async-iterable; `close()` deregisters it. After a reconnection the
   * subscription is registered again automatically (events during the outage are lost).
   */
  async domainEvents<K extends DomainEventKind>(kind: K, dom?: DomainRef): Promise<EventStream<EventOf<K>>> {
    if (!(kind in EVENT_IDS)) throw new TypeError(`domainEvents: unknown event kind "${kind}"`);
    const sub: Subscription = {
      kind,
      dom: dom ?? null,
      callbackId: -1,
      stream: new EventStream<DomainEvent>(() => this.unsubscribe(sub)),
    };
    await this.register(sub, this.state === 'open' ? this.transport : await this.ready());
    this.subs.add(sub);
    return sub.stream as unknown as EventStream<EventOf<K>>;
  }

  private async register(sub: Subscription, t: RpcTransport): Promise<void> {
    const id = await t.call(
      REMOTE_PROGRAM,
      REMOTE_PROTOCOL_VERSION,
      RemoteProc.CONNECT_DOMAIN_EVENT_CALLBACK_REGISTER_ANY,
      (w) => {
        w.int(EVENT_IDS[sub.kind]);
        w.optional(sub.dom, writeDomain);
      },
      (r) => r.int(),
    );
    sub.callbackId = id;
    // Deliver events that arrived before the registration reply was processed.
    const early = this.orphanEvents.filter((o) => o.callbackId === id);
    if (early.length > 0) {
      this.orphanEvents = this.orphanEvents.filter((o) => o.callbackId !== id);
      for (const o of early) {
        this.orphanBytes -= o.bytes;
        sub.stream.push(o.ev, o.bytes);
      }
    }
  }

  private async resubscribe(t: RpcTransport): Promise<void> {
    this.orphanEvents = [];
    this.orphanBytes = 0;
    for (const s of this.subs) await this.register(s, t);
  }

  private async unsubscribe(sub: Subscription): Promise<void> {
    this.subs.delete(sub);
    const id = sub.callbackId;
    sub.callbackId = -1;
    if (id < 0 || this.state !== 'open') return;
    try {
      await this.rpc(RemoteProc.CONNECT_DOMAIN_EVENT_CALLBACK_DEREGISTER_ANY, (w) => w.int(id, 'id'));
    } catch (e) {
      // Deregistering on a connection that just died is moot; anything else is real.
      if (!(e instanceof LibvirtConnectionError)) throw e;
    }
  }

  private onMessage(m: Message): void {
    if (m.header.program !== REMOTE_PROGRAM) return;
    const read = EVENT_READERS[m.header.procedure];
    if (!read) return;
    let ev: DomainEvent;
    try {
      const r = new XdrReader(m.payload, 0, m.payload.length, `event ${m.header.procedure}`);
      ev = read(r);
      r.done();
    } catch {
      // A malformed event cannot be attributed to a subscriber; drop it.
      return;
    }
    for (const s of this.subs) {
      if (s.callbackId === ev.callbackId) {
        s.stream.push(ev, m.payload.length);
        return;
      }
    }
    this.orphanEvents.push({ callbackId: ev.callbackId, ev, bytes: m.payload.length });
    this.orphanBytes += m.payload.length;
    while (this.orphanEvents.length > MAX_ORPHAN_EVENTS || this.orphanBytes > MAX_ORPHAN_BYTES) {
      this.orphanBytes -= this.orphanEvents.shift()!.bytes;
    }
  }
}
