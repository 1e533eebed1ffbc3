/**
 * One probe of one running container, on kubelet's schedule (pkg/kubelet/prober/worker.go):
 * nothing before `initialDelaySeconds` from the container's start, then an attempt every
 * `periodSeconds`; the result turns to success after `successThreshold` consecutive
 * successes and to failure after `failureThreshold` consecutive failures. A readiness
 * result starts as failure (not ready until proven), a liveness one as success.
 */
import type { PodProbe } from '../../common/pod';
import { type ProbeOutcome, type ProbeTarget, runProbeAction } from './probe-action';

/** Which probe a worker runs. */
export type ProbeKind = 'readiness' | 'liveness';

/** Options of {@link ProbeWorker}. */
export interface ProbeWorkerOptions {
  kind: ProbeKind;
  probe: PodProbe;
  target: ProbeTarget;
  /** When the container started (ISO time): the initial delay counts from there. */
  startedAt: string;
  /** Called when the result flips, with the last attempt's outcome. */
  onResult: (ok: boolean, last: ProbeOutcome) => void;
  /** Called on every failed attempt (kubelet's `Unhealthy` event). */
  onFailure?: (last: ProbeOutcome) => void;
  /** The attempt itself (tests replace it). */
  attempt?: (probe: PodProbe, target: ProbeTarget) => Promise<ProbeOutcome>;
}

/** Runs one probe until stopped. */
export class ProbeWorker {
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private successes = 0;
  private failures = 0;
  /** The current result. */
  result: boolean;

  constructor(private readonly o: ProbeWorkerOptions) {
    this.result = o.kind === 'liveness';
  }

  /** Schedules the first attempt after what is left of the initial delay. */
  start(): void {
    const started = Date.parse(this.o.startedAt);
    const delayMs = (this.o.probe.initialDelaySeconds ?? 0) * 1000;
    const left = Number.isNaN(started) ? delayMs : Math.max(0, started + delayMs - Date.now());
    this.schedule(left);
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.run(), ms);
    this.timer.unref?.();
  }

  private async run(): Promise<void> {
    const outcome = await (this.o.attempt ?? runProbeAction)(this.o.probe, this.o.target);
    if (this.stopped) return;
    if (outcome.ok) {
      this.failures = 0;
      this.successes++;
      if (!this.result && this.successes >= (this.o.probe.successThreshold ?? 1)) this.flip(true, outcome);
    } else {
      this.successes = 0;
      this.failures++;
      this.o.onFailure?.(outcome);
      if (this.result && this.failures >= (this.o.probe.failureThreshold ?? 3)) this.flip(false, outcome);
    }
    this.schedule(Math.max(1, this.o.probe.periodSeconds ?? 10) * 1000);
  }

  private flip(ok: boolean, outcome: ProbeOutcome): void {
    this.result = ok;
    // kubelet resets the counters on a liveness failure (the container restarts).
    this.o.onResult(ok, outcome);
  }
}
