/**
 * The launcher's side of the notify pipe to the node agent: domain changes and Kubernetes
 * events about the VMI, sent in order (one chain) and never blocking the caller. A node
 * agent that is away (restarting) misses them; it re-reads the domain with GetDomain.
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

/** Sends to the node agent's notify socket at `path`. */
export class NodeNotifier {
  private readonly sender: NotifySender;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    path: string,
    private readonly involvedObject: InvolvedVmi,
    private readonly log: (m: string) => void,
  ) {
    this.sender = new NotifySender(path);
  }

  /** Queues a domain change (`domain` as GetDomain would answer). */
  domainEvent(eventType: DomainEventNotification['eventType'], domain: LauncherDomain | undefined): void {
    this.chain = this.chain.then(() =>
      this.sender.sendDomainEvent({ eventType, domain }, 2_000).then((err) => {
        if (err && process.env.KUBEVIRT_TS_DEBUG) this.log(`notify: ${err.message}`);
      }),
    );
  }

  /** Queues a Kubernetes event on the VMI (upstream's HandleK8sEvent). */
  k8sEvent(type: 'Normal' | 'Warning', reason: string, message: string): void {
    const involvedObject = this.involvedObject;
    this.chain = this.chain.then(() =>
      this.sender.sendK8sEvent({ type, reason, message, involvedObject }, 2_000).then((err) => {
        if (err && process.env.KUBEVIRT_TS_DEBUG) this.log(`notify event: ${err.message}`);
      }),
    );
  }

  /** Waits up to `ms` for what is queued to be sent. */
  async flush(ms: number): Promise<void> {
    await Promise.race([this.chain, new Promise((r) => setTimeout(r, ms))]);
  }

  close(): void {
    this.sender.close();
  }
}
