/**
 * The launcher's view of its domain and its reports of it to the node agent: it follows
 * the driver's events (./driver-watch), keeps the state the driver last gave, whether the
 * guest ever ran and whether it has ended (the launcher then exits after a final wait),
 * and sends each change, and Kubernetes events about the VMI, down the notify pipe. Kept
 * apart from launcher.ts, which serves the RPCs, so the rules of a refresh read in one place.
 */
import { join } from 'node:path';
import type { DomainInfo, DomainRef, HypervisorDriver } from '../../drivers/driver';
import type { DomainEventNotification } from '../launcher-protocol';
import type { LauncherDomain } from '../launcher-protocol/domain-report';
import { NOTIFY_PIPE_SOCKET } from '../launcher-protocol/paths';
import { coalesced } from './coalesced';
import { ACTIVE_STATES } from './domain-rpcs';
import { watchDriver } from './driver-watch';
import type { GuestEndpoints } from './guest-endpoints';
import type { LauncherMigrations } from './migration-rpcs';
import { type InvolvedVmi, NodeNotifier } from './node-notifier';

/** What {@link DomainReporter} needs from the launcher (read when called). */
export interface DomainReporterHost {
  ref: DomainRef;
  domainName: string;
  /** The VMI; its node agent's notify pipe is in `socketDir`. */
  vmi: InvolvedVmi;
  socketDir: string;
  /** The connected driver; undefined before start. */
  driver: () => HypervisorDriver | undefined;
  /** Builds a new driver when the connection ends (the launcher's `connectDriver`). */
  connect: () => Promise<HypervisorDriver>;
  /** Swaps in the driver that replaces a lost one (and closes the old). */
  replaceDriver: (next: HypervisorDriver) => Promise<void>;
  /** The guest agent's channel changed: the launcher reads the agent now. */
  pollAgent: () => void;
  /** True once the launcher began to exit: nothing is read or reported any more. */
  exiting: () => boolean;
  migrations: Pick<LauncherMigrations, 'receiving' | 'arrived'>;
  endpoints: Pick<GuestEndpoints, 'consoleAttached'>;
  /** Attaches the console and VNC relays to the running guest. */
  attachDevices: () => Promise<void>;
  /** What GetDomain answers (the whole domain report). */
  report: () => LauncherDomain | undefined;
  /** How long an ended guest's launcher waits for the node agent before it exits (ms). */
  finalWaitMs?: number;
  exit: (code: number) => Promise<void>;
  log: (m: string) => void;
}

/** One launcher's domain state and its reports. */
export class DomainReporter {
  /** The launcher's end of the node agent's notify pipe. */
  readonly notify: NodeNotifier;
  /** The domain as the driver last gave it (undefined: none, or not read yet). */
  last: DomainInfo | undefined;
  /** True once a first event (ADDED) went to the node agent. */
  reported = false;
  /** True once the guest ran here: its end is then the launcher's end. */
  everRan = false;
  /** True once the guest has ended; it is never started again by this launcher. */
  finished = false;
  private finalTimer: NodeJS.Timeout | undefined;
  /** A background console/VNC attach in progress. */
  private attaching: Promise<void> | undefined;

  constructor(private readonly h: DomainReporterHost) {
    this.notify = new NodeNotifier(join(h.socketDir, NOTIFY_PIPE_SOCKET), h.vmi, (m) => h.log(m));
  }

  /** Follows the driver's events; reconnects when the daemon goes away (./driver-watch). */
  watch(driver: HypervisorDriver): Promise<void> {
    return watchDriver(driver, {
      domainName: this.h.domainName,
      connect: this.h.connect,
      exiting: this.h.exiting,
      onEvent: (ev) => {
        // The agent's channel changed: read it now rather than at the next backstop poll.
        if (ev.type === 'agent') this.h.pollAgent();
        else void this.refresh();
        // upstream's launcher reports an I/O-error pause as a Warning event on the VMI.
        if (ev.type === 'paused' && ev.reason === 'ioerror')
          this.k8sEvent('Warning', 'IOerror', 'VM Paused due to IO error');
      },
      onReconnect: async (next) => {
        await this.h.replaceDriver(next);
        void this.refresh();
      },
      log: this.h.log,
    });
  }

  /** Re-reads the domain and reports a change; serialised, coalescing bursts (./coalesced). */
  readonly refresh = coalesced(
    () => this.refreshOnce(),
    (e) => this.h.log(`refresh: ${e.message}`),
  );

  private async refreshOnce(): Promise<void> {
    const driver = this.h.driver();
    if (!driver || this.h.exiting()) return;
    const info = await driver.getDomain(this.h.ref);
    if (info && ACTIVE_STATES.has(info.state) && !this.h.migrations.receiving(info)) {
      this.everRan = true;
      this.h.migrations.arrived();
      // Re-attach in the background: while a guest powers off, its console socket is
      // already gone and attaching retries for up to 30 s, which must not hold up the
      // refresh that reports the shutoff (and every RPC waiting on it).
      if (!this.h.endpoints.consoleAttached && !this.attaching) {
        this.attaching = this.h.attachDevices().finally(() => {
          this.attaching = undefined;
        });
      }
    }
    const gone = !info || info.state === 'shutoff' || info.state === 'crashed';
    if (this.everRan && gone && !this.finished) {
      this.finished = true;
      this.h.log(`domain is ${info ? info.state : 'gone'}; waiting for the node agent to collect it`);
      this.finalTimer = setTimeout(() => void this.h.exit(0), this.h.finalWaitMs ?? 30_000);
      this.finalTimer.unref?.();
    }
    const changed = JSON.stringify(info) !== JSON.stringify(this.last) || !this.reported;
    this.last = info;
    if (changed) this.send(info ? (this.reported ? 'MODIFIED' : 'ADDED') : 'DELETED');
  }

  /**
   * A migration's state changed (it started, made progress, ended): re-read the domain and
   * report, also when libvirt's view of it did not change, as upstream's launcher reports
   * its migration metadata's changes; the node agent then records the start at once.
   */
  async reportMigration(): Promise<void> {
    await this.refresh();
    this.modified();
  }

  /** Reports the domain as MODIFIED once it was reported at all, unless the launcher is exiting. */
  modified(): void {
    if (this.reported && !this.h.exiting()) this.send('MODIFIED');
  }

  /** A Kubernetes event on the VMI, recorded by the node agent (HandleK8sEvent). */
  k8sEvent(type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.notify.k8sEvent(type, reason, message);
  }

  /** Sends the whole domain report to the node agent as an event of `eventType`. */
  send(eventType: DomainEventNotification['eventType']): void {
    this.reported = true;
    this.notify.domainEvent(eventType, this.h.report());
  }

  /** Cancels the final wait's exit (the launcher exits by itself). */
  stop(): void {
    if (this.finalTimer) clearTimeout(this.finalTimer);
  }
}
