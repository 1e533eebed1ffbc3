/**
 * A domain console over libvirt's stream protocol (DOMAIN_OPEN_CONSOLE): guest output
 * arrives as STREAM packets with status CONTINUE on the opening call's serial; input is sent
 * the same way; the client finishes with status OK (the daemon confirms with OK) or aborts
 * with status ERROR.
 */
import { LibvirtConnectionError, type LibvirtError } from './errors';
import { EventStream } from './events';
import { MessageStatus, REMOTE_PROGRAM, REMOTE_PROTOCOL_VERSION, RemoteProc } from './protocol/constants';
import type { RpcTransport, StreamHandler } from './transport';

/** Largest stream packet payload this client sends (libvirt's legacy payload limit). */
const MAX_CHUNK = 262120;

/** Flags of `domainOpenConsole` (virDomainConsoleFlags). */
export const ConsoleFlags = { FORCE: 1, SAFE: 2 } as const;

/**
 * An open console: iterate it (`for await (const chunk of console)`) for guest output,
 * `write` to type into it, `close` to hang up. Ends with an error when the daemon aborts
 * the stream or the connection is lost.
 */
export class DomainConsole implements AsyncIterable<Buffer> {
  private serial = -1;
  private finished = false;
  private readonly output: EventStream<Buffer>;

  /** @internal Built by `LibvirtClient.domainOpenConsole`. */
  constructor(private readonly transport: RpcTransport) {
    this.output = new EventStream<Buffer>(() => this.finish(MessageStatus.ERROR));
  }

  /** @internal The transport-side handler of this stream. */
  readonly handler: StreamHandler = {
    onOpen: (serial) => {
      this.serial = serial;
    },
    onData: (data) => this.output.push(Buffer.from(data), data.length),
    onEnd: () => {
      this.finished = true;
      this.output.end();
    },
    onError: (err: LibvirtError) => {
      this.finished = true;
      this.output.fail(err);
    },
  };

  /** Sends input to the guest console. */
  write(data: Buffer | string): void {
    if (this.finished) throw new LibvirtConnectionError('closed', 'console stream is closed');
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
    for (let off = 0; off < buf.length; off += MAX_CHUNK) {
      this.transport.sendStream(
        REMOTE_PROGRAM,
        REMOTE_PROTOCOL_VERSION,
        RemoteProc.DOMAIN_OPEN_CONSOLE,
        this.serial,
        MessageStatus.CONTINUE,
        buf.subarray(off, off + MAX_CHUNK),
      );
    }
  }

  /** Next chunk of guest output. */
  next(): Promise<IteratorResult<Buffer>> {
    return this.output.next();
  }

  [Symbol.asyncIterator](): AsyncIterator<Buffer> {
    return this.output;
  }

  private finish(status: number): void {
    if (this.finished) return;
    this.finished = true;
    try {
      this.transport.sendStream(
        REMOTE_PROGRAM,
        REMOTE_PROTOCOL_VERSION,
        RemoteProc.DOMAIN_OPEN_CONSOLE,
        this.serial,
        status,
      );
    } catch {
      // The connection is already gone; there is nothing left to close.
    }
    this.transport.dropStream(this.serial);
  }

  /** Hangs up: tells the daemon the stream is finished and ends iteration. */
  async close(): Promise<void> {
    this.finish(MessageStatus.OK);
    await this.output.close();
  }
}
