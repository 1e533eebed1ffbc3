/**
 * A launcher on the fake driver for unit tests: its real unix-socket gRPC server in a temp
 * sockets dir, a {@link LauncherClient} on it and, when asked, a notify-pipe server
 * collecting the domain events the launcher sends; `close()` undoes all of it.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { VirtualMachineInstance } from '../../../src/api';
import {
  type DomainEventNotification,
  LauncherClient,
  type NotifyServer,
  serveNotify,
} from '../../../src/controllers/launcher-protocol';
import type { LauncherDomain } from '../../../src/controllers/launcher-protocol/domain-report';
import { NOTIFY_PIPE_SOCKET } from '../../../src/controllers/launcher-protocol/paths';
import { VirtLauncher, type VirtLauncherOptions } from '../../../src/controllers/virt-launcher/launcher';
import { FakeDriver, FakeHost, type HypervisorDriver } from '../../../src/drivers';

/** A small VMI `namespace/name` (`uid`) as the fake-launcher tests sync it; default ns1/vm1, uid-1. */
export function fakeLauncherVmi(
  meta: { namespace?: string; name?: string; uid?: string } = {},
): VirtualMachineInstance {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: meta.name ?? 'vm1', namespace: meta.namespace ?? 'ns1', uid: meta.uid ?? 'uid-1' },
    spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } },
  };
}

/** Options of {@link startFakeLauncher}. */
export interface FakeLauncherOptions {
  /** Default ns1. */
  namespace?: string;
  /** Default vm1. */
  name?: string;
  /** Default uid-1. */
  uid?: string;
  /** The fake host the default driver runs on (default: a new one). */
  host?: FakeHost;
  /** Builds the driver (default: a FakeDriver on `host`). */
  driver?: () => HypervisorDriver;
  /** Serve the notify pipe in the sockets dir and collect its domain events. */
  notify?: boolean;
  /** Temp-dir prefix (default `kvts-launcher-`). */
  dirPrefix?: string;
  /** Further launcher options (poll intervals, final wait); grace period 5 s and emulation are set. */
  launcher?: Partial<
    Pick<
      VirtLauncherOptions,
      | 'finalWaitMs'
      | 'agentPollMs'
      | 'agentConnectPollMs'
      | 'migrationPollMs'
      | 'accessCredentialDir'
      | 'prepareNetwork'
    >
  >;
}

/** A started fake-driver launcher; see {@link startFakeLauncher}. */
export interface FakeLauncher {
  /** The sockets dir (launcher-sock, notify pipe, migration target XML). */
  dir: string;
  host: FakeHost;
  launcher: VirtLauncher;
  client: LauncherClient;
  /** The notify pipe's domain events, oldest first (empty without `notify`). */
  events: DomainEventNotification[];
  /** The launcher's current domain report. */
  domain(): Promise<LauncherDomain | undefined>;
  /** Closes the client, stops the launcher and the notify server, removes the dir. */
  close(): Promise<void>;
}

/** Starts a launcher on the fake driver with a client (and optionally a notify pipe). */
export async function startFakeLauncher(opts: FakeLauncherOptions = {}): Promise<FakeLauncher> {
  const host = opts.host ?? new FakeHost();
  const driver = opts.driver ?? (() => new FakeDriver({ host }));
  const dir = mkdtempSync(join(tmpdir(), opts.dirPrefix ?? 'kvts-launcher-'));
  const events: DomainEventNotification[] = [];
  let notify: NotifyServer | undefined;
  let launcher: VirtLauncher | undefined;
  try {
    if (opts.notify) {
      notify = await serveNotify(join(dir, NOTIFY_PIPE_SOCKET), { onDomainEvent: (e) => events.push(e) });
    }
    launcher = new VirtLauncher({
      namespace: opts.namespace ?? 'ns1',
      name: opts.name ?? 'vm1',
      uid: opts.uid ?? 'uid-1',
      gracePeriodSeconds: 5,
      socketDir: dir,
      connectDriver: async () => driver(),
      syncOptions: { useEmulation: true },
      ...opts.launcher,
      log: () => {},
    });
    await launcher.start();
  } catch (e) {
    await launcher?.exit(1);
    await notify?.close();
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const started = launcher;
  const client = new LauncherClient(join(dir, 'launcher-sock'), { timeoutMs: 5_000 });
  return {
    dir,
    host,
    launcher: started,
    client,
    events,
    domain: async () => (await client.getDomain()) as LauncherDomain | undefined,
    async close() {
      client.close();
      await started.exit(0);
      await notify?.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
