import { chmod, mkdir, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { connectivityState, credentials, Metadata, Server, status } from '@grpc/grpc-js';
import { bindUnixSocket, unixSocketServer } from '../common/grpc-unix';
import {
  NotifyClient,
  type NotifyServer as NotifyImpl,
  NotifyService,
} from './generated/kubevirt/notify/v1/notify';

/** A domain event as the launcher reports it to the node agent. */
export interface DomainEventNotification {
  /** Libvirt-style event type: Added, Modified, Deleted (upstream's watch event types). */
  eventType: 'ADDED' | 'MODIFIED' | 'DELETED';
  /** The domain as JSON (name, uuid, state, reason, ...). */
  domain: unknown;
  /** Optional status payload (interfaces, guest info). */
  status?: unknown;
}

/**
 * A Kubernetes event the launcher asks the node agent to record (upstream sends a
 * core/v1 Event with the VMI as involvedObject through HandleK8sEvent).
 */
export interface K8sEventNotification {
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  involvedObject: { kind: 'VirtualMachineInstance'; namespace: string; name: string; uid: string };
}

/** The node agent's notify server, one per node, on a unix socket with mode 0600. */
export interface NotifyServer {
  readonly socketPath: string;
  close(): Promise<void>;
}

/** Serves the Notify service; `onDomainEvent` runs for each launcher event. */
export async function serveNotify(
  socketPath: string,
  handlers: { onDomainEvent(ev: DomainEventNotification): void; onK8sEvent?(ev: unknown): void },
): Promise<NotifyServer> {
  await mkdir(dirname(socketPath), { recursive: true, mode: 0o700 });
  await rm(socketPath, { force: true });
  const server = new Server();
  const impl: NotifyImpl = {
    handleDomainEvent: (call, cb) => {
      try {
        const r = call.request;
        handlers.onDomainEvent({
          eventType: r.eventType as DomainEventNotification['eventType'],
          domain: r.domainJSON.length ? JSON.parse(Buffer.from(r.domainJSON).toString()) : undefined,
          status: r.statusJSON.length ? JSON.parse(Buffer.from(r.statusJSON).toString()) : undefined,
        });
        cb(null, { success: true, message: '' });
      } catch (err) {
        cb({ code: status.INVALID_ARGUMENT, message: (err as Error).message }, null);
      }
    },
    handleK8SEvent: (call, cb) => {
      try {
        handlers.onK8sEvent?.(JSON.parse(Buffer.from(call.request.eventJSON).toString()));
        cb(null, { success: true, message: '' });
      } catch (err) {
        cb({ code: status.INVALID_ARGUMENT, message: (err as Error).message }, null);
      }
    },
  };
  server.addService(NotifyService, impl);
  await bindUnixSocket(server, socketPath);
  await chmod(socketPath, 0o600);
  return unixSocketServer(server, socketPath);
}

/**
 * The channel's reconnect backoff: the socket is the node agent's pipe in the launcher's
 * own pod, which appears once the agent first talks to the launcher (and again after an
 * agent restart); gRPC's default backoff (1 s, growing to 120 s) would keep a channel that
 * once found no socket failing for that long after the pipe is there.
 */
const CHANNEL_OPTIONS = { 'grpc.initial_reconnect_backoff_ms': 100, 'grpc.max_reconnect_backoff_ms': 1_000 };

/**
 * Each call waits, up to its deadline, for the channel to connect instead of failing at
 * once while it is not connected (upstream's notify client dials blocking, with a
 * timeout): an event sent before the agent's pipe exists, or while the channel
 * reconnects, is delivered once it does.
 */
const waitForReady = () => new Metadata({ waitForReady: true });

/** The launcher's side: sends domain events to the node agent. Failures are returned, not thrown. */
export class NotifySender {
  private readonly client: NotifyClient;
  constructor(readonly socketPath: string) {
    this.client = new NotifyClient(`unix:${socketPath}`, credentials.createInsecure(), CHANNEL_OPTIONS);
  }

  /** Asks the node agent to record a Kubernetes event on the VMI. */
  sendK8sEvent(ev: K8sEventNotification, timeoutMs = 5_000): Promise<Error | undefined> {
    return new Promise((resolve) => {
      this.client.handleK8SEvent(
        { eventJSON: Buffer.from(JSON.stringify(ev)) },
        waitForReady(),
        { deadline: new Date(Date.now() + timeoutMs) },
        (err) => resolve(err ?? undefined),
      );
    });
  }

  sendDomainEvent(ev: DomainEventNotification, timeoutMs = 5_000): Promise<Error | undefined> {
    return new Promise((resolve) => {
      this.client.handleDomainEvent(
        {
          eventType: ev.eventType,
          domainJSON: Buffer.from(JSON.stringify(ev.domain ?? null)),
          statusJSON: ev.status === undefined ? Buffer.alloc(0) : Buffer.from(JSON.stringify(ev.status)),
        },
        waitForReady(),
        { deadline: new Date(Date.now() + timeoutMs) },
        (err) => resolve(err ?? undefined),
      );
    });
  }

  /** Whether the channel is connected to the node agent now. */
  connected(): boolean {
    return this.client.getChannel().getConnectivityState(false) === connectivityState.READY;
  }

  close(): void {
    this.client.close();
  }
}
