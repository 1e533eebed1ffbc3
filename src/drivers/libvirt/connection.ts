/**
 * The connection under `LibvirtClient` (./client): the transport to libvirtd's unix socket,
 * keepalive, reconnection after a daemon restart, the remote and QEMU program calls the
 * client's methods are built on, and domain event streams.
 */

import {
  type ClientState,
  type LibvirtClientOptions,
  type ReconnectOptions,
  VIR_CONNECT_RO,
} from './client-options';
import {
  AUTH_NAMES,
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
import {
  LibvirtConnectionError,
  LibvirtError,
  VIR_ERR_AUTH_FAILED,
  VIR_ERR_ERROR,
  VIR_FROM_REMOTE,
} from './errors';
import { EventStream } from './events';
import {
  QEMU_PROGRAM,
  QEMU_PROTOCOL_VERSION,
  REMOTE_AUTH_NONE,
  REMOTE_PROGRAM,
  REMOTE_PROTOCOL_VERSION,
  RemoteProc,
  VIR_DRV_FEATURE_PROGRAM_KEEPALIVE,
} from './protocol/constants';
import type { Message } from './protocol/packet';
import { type DomainEvent, readAuthList } from './protocol/remote';
import { type DomainRef, writeDomain, writeOptString } from './protocol/types';
import { RpcTransport } from './transport';
import { XdrReader, type XdrWriter } from './xdr';

/**
 * The connection under `LibvirtClient`: the transport, keepalive and reconnection, the
 * remote and QEMU program calls its methods are built on, and domain event streams.
 */
export abstract class LibvirtConnection {
  private transport: RpcTransport;
  private state: ClientState = 'open';
  private reconnecting: Promise<void> | null = null;
  private finalError: LibvirtError | null = null;
  private readonly subs = new Set<Subscription>();
  private orphanEvents: Array<{ callbackId: number; ev: DomainEvent; bytes: number }> = [];
  private orphanBytes = 0;
  private readonly stateListeners: Array<(s: ClientState, err?: LibvirtError) => void> = [];

  protected constructor(
    transport: RpcTransport,
    protected readonly opts: Required<Pick<LibvirtClientOptions, 'uri' | 'socketPath'>> &
      LibvirtClientOptions,
  ) {
    this.transport = transport;
    this.attach(transport);
  }

  protected static async openTransport(opts: LibvirtClientOptions & { uri: string; socketPath: string }) {
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
        t = await LibvirtConnection.openTransport(this.opts);
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

  /** The transport once the client is usable (waits for a reconnection in progress). */
  protected async usableTransport(): Promise<RpcTransport> {
    return this.state === 'open' ? this.transport : await this.ready();
  }

  /** Resolves when the client is usable; waits for a reconnection in progress. */
  private async ready(): Promise<RpcTransport> {
    if (this.state === 'closed')
      throw this.finalError ?? new LibvirtConnectionError('client-closed', 'client closed');
    if (this.reconnecting) await this.reconnecting;
    return this.transport;
  }

  protected async rpc<T>(
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

  protected async qemuRpc<T>(
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
