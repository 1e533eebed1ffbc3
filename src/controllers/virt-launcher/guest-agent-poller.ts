/**
 * The launcher's guest-agent poller. The launcher calls {@link poll} when the driver
 * reports the agent's channel connecting or disconnecting (libvirt's agent-lifecycle
 * event), so AgentConnected follows the agent at once. Besides, while the guest runs, it
 * looks every `connectPollMs` (30 s: a backstop for an event missed while the launcher
 * reconnected; a guest without an agent costs one domain XML read per period) and, once
 * connected, reads the agent every `pollMs` (10 s, upstream's agent poll period: OS info
 * and interfaces change rarely, and each read is seven agent round trips). It calls `onChange` only when
 * the report changes, so a steady guest causes no notify events and no VMI writes.
 */
import type { DomainRef, HypervisorDriver } from '../../drivers/driver';
import type { GuestInfo } from '../../drivers/guest-agent';
import { guestAgentReport, type LauncherGuestAgent } from '../launcher-protocol/guest-agent-report';

/** Options of {@link GuestAgentPoller}. */
export interface GuestAgentPollerOptions {
  ref: DomainRef;
  /** The current driver (it changes when the launcher reconnects). */
  driver: () => HypervisorDriver | undefined;
  /** Whether the domain is running now (no polling otherwise). */
  active: () => boolean;
  /** Called after the report changed. */
  onChange: () => void;
  /** Called after each look at the agent (the access-credential sync runs here). */
  onPolled?: (connected: boolean) => Promise<void>;
  /** Period while the agent is connected, ms (default 10 000). */
  pollMs?: number;
  /** Period while it is not, ms (default 30 000; the agent event triggers a poll at once). */
  connectPollMs?: number;
  log?: (message: string) => void;
}

/** Polls one domain's guest agent. */
export class GuestAgentPoller {
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private current: LauncherGuestAgent | undefined;
  private info: GuestInfo | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly o: GuestAgentPollerOptions) {}

  /** The last report; undefined when the driver cannot read a guest agent. */
  get report(): LauncherGuestAgent | undefined {
    return this.current;
  }

  /** Starts polling (first look at once). */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(0);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /**
   * The agent's full answer: the last one, or a fresh read when there is none yet.
   * Undefined when no agent answers.
   */
  async guestInfo(): Promise<GuestInfo | undefined> {
    if (!this.info) await this.poll();
    return this.info;
  }

  /** Reads the agent now (one read at a time), updating the report. */
  poll(): Promise<void> {
    this.running ??= this.pollOnce().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.poll().then(() => {
        const connected = this.current?.connected === true;
        this.schedule(connected ? (this.o.pollMs ?? 10_000) : (this.o.connectPollMs ?? 30_000));
      });
    }, ms);
    this.timer.unref?.();
  }

  private async pollOnce(): Promise<void> {
    const agent = this.o.driver()?.guestAgent;
    let next: LauncherGuestAgent | undefined;
    let info: GuestInfo | undefined;
    if (agent) {
      try {
        const connected = this.o.active() && (await agent.connected(this.o.ref));
        // A connected agent that does not answer (a paused guest) keeps its last answer.
        info = connected ? ((await agent.guestInfo(this.o.ref)) ?? this.info) : undefined;
        next = guestAgentReport(connected, info);
      } catch (e) {
        // The domain went away or the daemon is restarting: no agent to report now.
        this.o.log?.(`guest agent: ${(e as Error).message}`);
        next = { connected: false };
      }
    }
    this.info = info;
    await this.o
      .onPolled?.(next?.connected === true)
      .catch((e) => this.o.log?.(`guest agent: ${(e as Error).message}`));
    const changed = JSON.stringify(next) !== JSON.stringify(this.current);
    this.current = next;
    if (changed && !this.stopped) this.o.onChange();
  }
}
