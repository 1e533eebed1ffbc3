/**
 * The launcher's side of the notify pipe to the node agent: domain changes and Kubernetes
 * events about the VMI, sent in order (one chain; domain changes queued behind a send are
 * merged into the latest) and never blocking the caller. A node agent that is away for
 * longer than a send's 2 s (restarting) misses them; it re-reads the domain with GetDomain.
 */
import { type DomainEventNotification, NotifySender } from '../launcher-protocol';
import type { LauncherDomain } from '../launcher-protocol/domain-report';

/** The VMI the events are about. */
export interface InvolvedVmi {
  kind: 'VirtualMachineInstance';
  namespace: string;
  name: string;
  uid: string;
}

/**
 * Sends to the node agent's notify socket at `path`. A send waits (up to 2 s) for the
 * agent's pipe to answer; domain changes queued meanwhile are sent as one, the latest (each
 * is the whole domain as GetDomain would answer, so an older one adds nothing).
 */
export class NodeNotifier {
  private readonly sender: NotifySender;
  private chain: Promise<unknown> = Promise.resolve();
  /** The domain change queued and not yet being sent, which later ones replace. */
  private pending: DomainEventNotification | undefined;
  /** Sends that failed in a row (logged when a streak starts and when it ends). */
  private failures = 0;

  constructor(
    path: string,
    private readonly involvedObject: InvolvedVmi,
    private readonly log: (m: string) => void,
  ) {
    this.sender = new NotifySender(path);
  }

  private outcome(err: Error | undefined): void {
    if (err) {
      if (this.failures++ === 0)
        this.log(
          `notify: the node agent did not take an event (${err.message}); the agent re-reads the domain`,
        );
    } else if (this.failures > 0) {
      this.log(`notify: the node agent answers again (${this.failures} event(s) were not delivered)`);
      this.failures = 0;
    }
  }

  /** Queues a domain change (`domain` as GetDomain would answer). */
  domainEvent(eventType: DomainEventNotification['eventType'], domain: LauncherDomain | undefined): void {
    const queued = this.pending;
    // An ADDED the agent has not seen yet stays ADDED.
    this.pending = { eventType: queued?.eventType === 'ADDED' ? 'ADDED' : eventType, domain };
    if (queued) return;
    this.chain = this.chain.then(() => {
      const ev = this.pending;
      this.pending = undefined;
      return ev && this.sender.sendDomainEvent(ev, 2_000).then((err) => this.outcome(err));
    });
  }

  /** Queues a Kubernetes event on the VMI (upstream's HandleK8sEvent). */
  k8sEvent(type: 'Normal' | 'Warning', reason: string, message: string): void {
    const involvedObject = this.involvedObject;
    this.chain = this.chain.then(() =>
      this.sender
        .sendK8sEvent({ type, reason, message, involvedObject }, 2_000)
        .then((err) => this.outcome(err)),
    );
  }

  /** Waits up to `ms` for what is queued to be sent (100 ms at most while no agent is connected). */
  async flush(ms: number): Promise<void> {
    // No agent connected (away, or never there): what is queued would only wait for it.
    const bound = this.sender.connected() ? ms : Math.min(ms, 100);
    await Promise.race([this.chain, new Promise((r) => setTimeout(r, bound))]);
  }

  close(): void {
    this.sender.close();
  }
}
