/**
 * One RPC connection to libvirtd over its unix socket: frames calls, multiplexes any
 * number of them in flight by serial, routes replies, async messages (events) and stream
 * packets, answers and sends keepalive probes, and fails every pending call with a
 * `LibvirtConnectionError` the moment the connection dies, so no caller ever hangs on a
 * dead socket. What a reply or stream packet must be is ./rpc-reply.
 */
import net from 'node:net';
import { LibvirtConnectionError, LibvirtError } from './errors';
import { DEFAULT_KEEPALIVE, KeepAlive, type KeepAliveOptions, PING_FRAME, PONG_FRAME } from './keepalive';
import { KEEPALIVE_PROC_PING, KEEPALIVE_PROGRAM, MessageStatus, MessageType } from './protocol/constants';
import { decodeMessage, encodeMessage, FrameDecoder, type Message } from './protocol/packet';
import {
  type CallId,
  callTimedOut,
  checkReply,
  deliverStreamPacket,
  invalidArgument,
  replyValue,
  type StreamHandler,
} from './rpc-reply';
import type { XdrReader, XdrWriter } from './xdr';

export type { StreamHandler } from './rpc-reply';

/** The daemon socket used when none is given. */
export const DEFAULT_SOCKET_PATH = '/var/run/libvirt/libvirt-sock';

/** Options of a transport connection. */
export interface TransportOptions {
  /** Unix socket path; default `/var/run/libvirt/libvirt-sock`. */
  socketPath?: string;
  /** Give up connecting after this many ms (default 10 s). */
  connectTimeoutMs?: number;
  /** Keepalive probing; `false` disables client-side probes (PINGs are still answered). */
  keepalive?: KeepAliveOptions | false;
  /**
   * A call without its reply after this many ms fails with VIR_ERR_OPERATION_TIMEOUT
   * (default 5 min; 0: no limit). Keepalive only proves the daemon alive, not that it
   * will ever answer this call.
   */
  callTimeoutMs?: number;
}

/** Default bound on one call's wait for its reply. */
export const DEFAULT_CALL_TIMEOUT_MS = 5 * 60_000;

interface Pending {
  resolve: (m: Message) => void;
  reject: (e: Error) => void;
}

/** A connected RPC transport. Create with `RpcTransport.connect`. */
export class RpcTransport {
  private readonly decoder = new FrameDecoder();
  private readonly pending = new Map<number, Pending>();
  private readonly streams = new Map<number, StreamHandler>();
  private serial = 0;
  private closedError: LibvirtConnectionError | null = null;
  private keepalive: KeepAlive | null = null;
  private corked = false;
  private readonly messageHandlers: Array<(m: Message) => void> = [];
  private readonly closeHandlers: Array<(e: LibvirtConnectionError) => void> = [];

  private constructor(
    private readonly socket: net.Socket,
    readonly socketPath: string,
    private readonly callTimeoutMs = DEFAULT_CALL_TIMEOUT_MS,
  ) {
    socket.on('data', (d: Buffer) => this.onData(d));
    socket.on('error', (e) =>
      this.fail(
        new LibvirtConnectionError('closed', `libvirt connection to ${socketPath} failed: ${e.message}`, {
          cause: e,
        }),
      ),
    );
    socket.on('close', () =>
      this.fail(
        new LibvirtConnectionError('closed', `libvirt connection to ${socketPath} closed by the daemon`),
      ),
    );
  }

  /** Opens the unix socket; rejects with `LibvirtConnectionError('connect-failed')`. */
  static connect(opts: TransportOptions = {}): Promise<RpcTransport> {
    const socketPath = opts.socketPath ?? DEFAULT_SOCKET_PATH;
    const timeoutMs = opts.connectTimeoutMs ?? 10_000;
    return new Promise((resolve, reject) => {
      const socket = net.createConnection({ path: socketPath });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(
          new LibvirtConnectionError(
            'connect-failed',
            `connecting to libvirt at ${socketPath} timed out after ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      const onError = (e: Error) => {
        clearTimeout(timer);
        reject(
          new LibvirtConnectionError(
            'connect-failed',
            `cannot connect to libvirt at ${socketPath}: ${e.message} (is libvirtd running?)`,
            { cause: e },
          ),
        );
      };
      socket.once('error', onError);
      socket.once('connect', () => {
        clearTimeout(timer);
        socket.off('error', onError);
        socket.setNoDelay?.(true);
        const t = new RpcTransport(socket, socketPath, opts.callTimeoutMs);
        if (opts.keepalive !== false) t.startKeepAlive(opts.keepalive ?? DEFAULT_KEEPALIVE);
        resolve(t);
      });
    });
  }

  /** True until the connection has failed or been closed. */
  get isOpen(): boolean {
    return this.closedError === null;
  }

  /** Calls in flight. */
  get inFlight(): number {
    return this.pending.size;
  }

  /** Registers a handler for async messages (events) of any program except keepalive. */
  onMessage(handler: (m: Message) => void): void {
    this.messageHandlers.push(handler);
  }

  /** Registers a handler called once when the connection dies or is closed. */
  onClose(handler: (e: LibvirtConnectionError) => void): void {
    this.closeHandlers.push(handler);
  }

  private nextSerial(): number {
    this.serial = (this.serial + 1) >>> 0;
    if (this.serial === 0) this.serial = 1;
    return this.serial;
  }

  private write(frame: Buffer): void {
    // Cork until the end of the tick so pipelined calls leave in one write.
    if (!this.corked) {
      this.corked = true;
      this.socket.cork();
      process.nextTick(() => {
        this.corked = false;
        this.socket.uncork();
      });
    }
    this.socket.write(frame);
  }

  /**
   * Sends a CALL and resolves with the decoded reply. Errors from the daemon reject with a
   * `LibvirtError`; a malformed reply with `LibvirtProtocolError`; arguments that do not
   * fit their wire types with `VIR_ERR_INVALID_ARG` naming the call (`name`); no reply
   * within `timeoutMs` (default: the transport's `callTimeoutMs`; 0: none) with
   * `VIR_ERR_OPERATION_TIMEOUT`. As libvirt's client, a reply must carry the call's
   * program, version and procedure and status OK or ERROR.
   */
  async call<T>(
    program: number,
    version: number,
    procedure: number,
    encode?: (w: XdrWriter) => void,
    decode?: (r: XdrReader) => T,
    stream?: StreamHandler,
    name = `procedure ${procedure}`,
    timeoutMs = this.callTimeoutMs,
  ): Promise<T> {
    if (this.closedError) throw this.closedError;
    const serial = this.nextSerial();
    const id: CallId = { program, version, procedure, name };
    let frame: Buffer;
    try {
      frame = encodeMessage(
        { program, version, procedure, type: MessageType.CALL, serial, status: MessageStatus.OK },
        encode,
      );
    } catch (e) {
      if (e instanceof LibvirtError) throw e;
      // Arguments that do not fit the wire types: say which call and which argument.
      throw invalidArgument(id, e as Error);
    }
    const reply = await new Promise<Message>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      if (timeoutMs > 0) {
        timer = setTimeout(() => {
          // The call is abandoned: a late reply to its serial is dropped by dispatch.
          this.pending.delete(serial);
          this.streams.delete(serial);
          reject(callTimedOut(id, this.socketPath, timeoutMs));
        }, timeoutMs);
      }
      this.pending.set(serial, {
        resolve: (m) => {
          clearTimeout(timer);
          resolve(m);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      if (stream) {
        this.streams.set(serial, stream);
        stream.onOpen?.(serial);
      }
      this.write(frame);
    });
    try {
      checkReply(reply, id);
    } catch (e) {
      this.streams.delete(serial);
      throw e;
    }
    return replyValue(reply, procedure, decode);
  }

  /** Sends a packet on an open stream (type STREAM, the serial of the call that opened it). */
  sendStream(
    program: number,
    version: number,
    procedure: number,
    serial: number,
    status: number,
    data?: Buffer,
  ): void {
    if (this.closedError) throw this.closedError;
    this.write(
      encodeMessage({ program, version, procedure, type: MessageType.STREAM, serial, status }, (w) => {
        if (data) w.raw(data);
      }),
    );
  }

  /** Ends a stream's local routing (after it finished or was aborted). */
  dropStream(serial: number): void {
    this.streams.delete(serial);
  }

  private startKeepAlive(opts: KeepAliveOptions): void {
    this.keepalive = new KeepAlive(
      opts,
      () => {
        if (!this.closedError) this.write(PING_FRAME);
      },
      (silentMs) =>
        this.fail(
          new LibvirtConnectionError(
            'keepalive-timeout',
            `libvirt daemon at ${this.socketPath} stopped answering (no message for ${silentMs} ms)`,
          ),
        ),
    );
    this.keepalive.start();
  }

  private onData(data: Buffer): void {
    const dropped = (e: unknown) =>
      this.fail(
        new LibvirtConnectionError(
          'closed',
          `libvirt connection to ${this.socketPath} dropped: ${(e as Error).message}`,
          { cause: e },
        ),
      );
    let frames: Buffer[];
    try {
      frames = this.decoder.push(data);
    } catch (e) {
      dropped(e);
      return;
    }
    for (const f of frames) {
      let m: Message;
      try {
        m = decodeMessage(f);
      } catch (e) {
        dropped(e);
        return;
      }
      // Only a whole message proves the daemon alive: a byte a second must not hold a call open.
      this.keepalive?.touch();
      this.dispatch(m);
    }
  }

  private dispatch(m: Message): void {
    const h = m.header;
    if (h.program === KEEPALIVE_PROGRAM) {
      if (h.procedure === KEEPALIVE_PROC_PING && !this.closedError) this.write(PONG_FRAME);
      return;
    }
    switch (h.type) {
      case MessageType.REPLY:
      case MessageType.REPLY_WITH_FDS: {
        const p = this.pending.get(h.serial);
        if (!p) return; // a reply to a call we stopped waiting for
        this.pending.delete(h.serial);
        p.resolve(m);
        return;
      }
      case MessageType.MESSAGE:
        for (const fn of this.messageHandlers) fn(m);
        return;
      case MessageType.STREAM: {
        const s = this.streams.get(h.serial);
        if (!s) return;
        if (h.status !== MessageStatus.CONTINUE) this.streams.delete(h.serial);
        deliverStreamPacket(s, m);
        return;
      }
      default:
        return;
    }
  }

  private fail(err: LibvirtConnectionError): void {
    if (this.closedError) return;
    this.closedError = err;
    this.keepalive?.stop();
    this.socket.destroy();
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.reject(err);
    const streams = [...this.streams.values()];
    this.streams.clear();
    for (const s of streams) s.onError(err);
    for (const fn of this.closeHandlers) fn(err);
  }

  /** Closes the socket; pending calls reject with `LibvirtConnectionError('client-closed')`. */
  close(): void {
    this.fail(new LibvirtConnectionError('client-closed', 'libvirt connection closed by the client'));
  }
}
