/**
 * The guest's serial console and VNC as unix sockets in the pod's sockets directory,
 * next to the command socket, where the node agent (and so virt-api) reaches them. The
 * console listens from the start and replays what the guest printed; both attach to
 * QEMU's endpoints once the domain runs.
 */
import { join } from 'node:path';
import type { DomainRef, HypervisorDriver } from '../../drivers/driver';
import { type SocketProxy, serveSocketProxy } from '../common/socket-proxy';
import { CONSOLE_SOCKET, VNC_SOCKET } from '../launcher-protocol/paths';
import { ConsoleRelay } from './console-relay';

/** The console relay and VNC proxy of one launcher. */
export class GuestEndpoints {
  private readonly console: ConsoleRelay;
  private vnc: SocketProxy | undefined;

  constructor(
    private readonly socketDir: string,
    private readonly log: (m: string) => void,
  ) {
    this.console = new ConsoleRelay({ listenPath: join(socketDir, CONSOLE_SOCKET) });
  }

  /** Starts listening on the console socket (before the guest runs). */
  listen(): Promise<void> {
    return this.console.listen();
  }

  get consoleAttached(): boolean {
    return this.console.attached;
  }

  /** The serial output so far. */
  get consoleOutput(): string {
    return this.console.output;
  }

  /** The socket names for the domain report (only those attached). */
  report(): { console?: string; vnc?: string } {
    return {
      console: this.console.attached ? CONSOLE_SOCKET : undefined,
      vnc: this.vnc ? VNC_SOCKET : undefined,
    };
  }

  /** Attaches whatever is not attached yet to the running domain's endpoints. */
  async attach(driver: HypervisorDriver, ref: DomainRef): Promise<void> {
    if (!this.console.attached) {
      try {
        const ep = await driver.consoleEndpoint(ref);
        if (ep.kind === 'unix' && ep.path) await this.console.attach(ep.path);
      } catch (e) {
        this.log(`console: ${(e as Error).message}`);
      }
    }
    if (!this.vnc) {
      try {
        const ep = await driver.vncEndpoint(ref);
        if (ep.kind === 'unix' && ep.path)
          this.vnc = await serveSocketProxy(join(this.socketDir, VNC_SOCKET), ep.path);
      } catch {
        // No VNC device (autoattachGraphicsDevice: false) or not running yet.
      }
    }
  }

  async close(): Promise<void> {
    await this.console.close().catch(() => undefined);
    await this.vnc?.close().catch(() => undefined);
  }
}
