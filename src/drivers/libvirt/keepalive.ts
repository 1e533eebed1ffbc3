/**
 * Dead-peer detection, as libvirt's virKeepAlive does it: after each `intervalMs` of
 * silence send a PING (the peer answers PONG); when `count` PINGs in a row went unanswered
 * and another interval passed, declare the peer dead. Any received message counts as a sign
 * of life and resets the count.
 */
import {
  KEEPALIVE_PROC_PING,
  KEEPALIVE_PROC_PONG,
  KEEPALIVE_PROGRAM,
  KEEPALIVE_PROTOCOL_VERSION,
  MessageStatus,
  MessageType,
} from './protocol/constants';
import { encodeMessage } from './protocol/packet';

/** Keepalive settings; libvirt's defaults are 5 s and 5 probes. */
export interface KeepAliveOptions {
  /** Silence before a probe is sent, in ms. */
  intervalMs: number;
  /** Unanswered intervals before the peer is declared dead. */
  count: number;
}

export const DEFAULT_KEEPALIVE: KeepAliveOptions = { intervalMs: 5000, count: 5 };

function keepaliveFrame(proc: number): Buffer {
  return encodeMessage({
    program: KEEPALIVE_PROGRAM,
    version: KEEPALIVE_PROTOCOL_VERSION,
    procedure: proc,
    type: MessageType.MESSAGE,
    serial: 0,
    status: MessageStatus.OK,
  });
}

/** The PING frame (program 0x6b656570 "keep", procedure 1, no payload). */
export const PING_FRAME = keepaliveFrame(KEEPALIVE_PROC_PING);
/** The PONG frame (procedure 2). */
export const PONG_FRAME = keepaliveFrame(KEEPALIVE_PROC_PONG);

/** Tracks liveness of one connection; `onDead` fires at most once. */
export class KeepAlive {
  private lastRx = Date.now();
  private timer: NodeJS.Timeout | undefined;
  private dead = false;

  constructor(
    private readonly opts: KeepAliveOptions,
    private readonly sendPing: () => void,
    private readonly onDead: (silentMs: number) => void,
  ) {
    if (!(opts.intervalMs > 0) || !(opts.count >= 1)) {
      throw new TypeError(`keepalive: intervalMs must be > 0 and count >= 1, got ${JSON.stringify(opts)}`);
    }
  }

  start(): void {
    this.lastRx = Date.now();
    // Check a few times per interval so a dead peer is noticed close to the deadline.
    const tick = Math.max(10, Math.floor(this.opts.intervalMs / 4));
    this.timer = setInterval(() => this.check(), tick);
    this.timer.unref();
  }

  /** Records that something arrived from the peer. */
  touch(): void {
    this.lastRx = Date.now();
    this.unanswered = 0;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private lastProbe = 0;
  private unanswered = 0;

  private check(): void {
    if (this.dead) return;
    const now = Date.now();
    if (now - this.lastRx < this.opts.intervalMs || now - this.lastProbe < this.opts.intervalMs) return;
    if (this.unanswered >= this.opts.count) {
      this.dead = true;
      this.stop();
      this.onDead(now - this.lastRx);
      return;
    }
    this.lastProbe = now;
    this.unanswered++;
    this.sendPing();
  }
}
