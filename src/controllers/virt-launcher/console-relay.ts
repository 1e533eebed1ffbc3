/**
 * The guest's serial console as a unix socket in the pod's sockets directory. QEMU's
 * serial socket takes one client and drops what is printed while nobody listens, so the
 * launcher stays connected from boot on, keeps the output (bounded), and lets any number
 * of clients attach: each gets the output so far, then live output; what clients type
 * goes to the guest.
 */
import { chmod, rm } from 'node:fs/promises';
import { connect, createServer, type Server, type Socket } from 'node:net';

/** Options of {@link ConsoleRelay}. */
export interface ConsoleRelayOptions {
  /** Socket the relay serves (mode 0600). */
  listenPath: string;
  /** Bytes of output kept for late clients (default 1 MiB). */
  historyBytes?: number;
}

/** Relays one guest serial console to many clients. */
export class ConsoleRelay {
  private server: Server | undefined;
  private guest: Socket | undefined;
  private readonly clients = new Set<Socket>();
  private history: Buffer[] = [];
  private historySize = 0;
  private closed = false;
  private readonly historyBytes: number;

  constructor(private readonly opts: ConsoleRelayOptions) {
    this.historyBytes = opts.historyBytes ?? 1024 * 1024;
  }

  /** Starts serving the listen socket. */
  async listen(): Promise<void> {
    await rm(this.opts.listenPath, { force: true });
    const server = createServer((c) => this.accept(c));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.opts.listenPath, () => resolve());
    });
    await chmod(this.opts.listenPath, 0o600);
    this.server = server;
  }

  /**
   * Connects to QEMU's serial socket, retrying until it exists (QEMU creates it when the
   * domain starts) or `timeoutMs` passes. A later call replaces the connection (after a
   * guest restart or a reconnect).
   */
  async attach(guestSocketPath: string, timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.closed) return;
      try {
        const s = await new Promise<Socket>((resolve, reject) => {
          const sock = connect(guestSocketPath);
          sock.once('connect', () => resolve(sock));
          sock.once('error', reject);
        });
        this.guest?.destroy();
        this.guest = s;
        s.on('data', (chunk: Buffer) => this.record(chunk));
        s.on('error', () => undefined);
        s.on('close', () => {
          if (this.guest === s) this.guest = undefined;
        });
        return;
      } catch (err) {
        if (Date.now() > deadline) {
          throw new Error(`serial console ${guestSocketPath}: ${(err as Error).message}`);
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  }

  /** Whether the relay is connected to the guest's console. */
  get attached(): boolean {
    return this.guest !== undefined;
  }

  /** Everything the guest printed that is still kept. */
  get output(): string {
    return Buffer.concat(this.history).toString('utf8');
  }

  private record(chunk: Buffer): void {
    this.history.push(chunk);
    this.historySize += chunk.length;
    while (this.historySize > this.historyBytes && this.history.length > 1) {
      this.historySize -= this.history.shift()?.length ?? 0;
    }
    for (const c of this.clients) c.write(chunk);
  }

  private accept(c: Socket): void {
    this.clients.add(c);
    for (const chunk of this.history) c.write(chunk);
    c.on('data', (d) => this.guest?.write(d));
    c.on('error', () => undefined);
    c.on('close', () => this.clients.delete(c));
  }

  async close(): Promise<void> {
    this.closed = true;
    this.guest?.destroy();
    for (const c of this.clients) c.destroy();
    this.clients.clear();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((r) => server.close(() => r()));
    await rm(this.opts.listenPath, { force: true });
  }
}
