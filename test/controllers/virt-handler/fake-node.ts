/**
 * One node of a handler test on fake hosts: a temp root with the pods dir, a FakeHost and
 * a started {@link VirtHandler} on the given store (no Node registration, fast resync);
 * and in-process launchers for that node's pods, serving on each pod's sockets emptyDir
 * where the handler looks for them.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MigrationConfiguration } from '../../../src/api/generated/types';
import { podEmptyDirPath } from '../../../src/controllers/launcher-protocol/paths';
import { shortDir } from '../../../src/controllers/launcher-protocol/short-dir';
import type { ObjectClient } from '../../../src/controllers/runtime/types';
import { VirtHandler } from '../../../src/controllers/virt-handler/handler';
import type { MigrationProxyWiring } from '../../../src/controllers/virt-handler/migration-proxy/wiring';
import { VirtLauncher } from '../../../src/controllers/virt-launcher/launcher';
import { FakeDriver, FakeHost, type HypervisorDriver } from '../../../src/drivers';

const debug = (prefix: string) =>
  process.env.KVTS_DEBUG ? (m: string) => console.log(`${prefix}: ${m}`) : () => {};

/** A node of a handler test; see {@link startFakeNode}. */
export interface FakeNode {
  name: string;
  root: string;
  host: FakeHost;
  handler: VirtHandler;
}

/**
 * Starts a handler for node `name` on `client`, its root a temp dir named with `rootPrefix`.
 * The test stops the handler and removes the root, after its launchers have exited.
 */
export async function startFakeNode(
  client: ObjectClient,
  name: string,
  o: {
    rootPrefix: string;
    migrationAddress?: string;
    migrationConfig?: () => MigrationConfiguration;
    migrationProxy?: MigrationProxyWiring;
  },
): Promise<FakeNode> {
  const root = mkdtempSync(join(tmpdir(), `${o.rootPrefix}${name}-`));
  const host = new FakeHost();
  const handler = new VirtHandler({
    client,
    nodeName: name,
    podsRoot: join(root, 'pods'),
    notifySocket: join(root, 'handler', 'domain-notify.sock'),
    capabilities: () => new FakeDriver({ host }).probe(),
    registerNode: false,
    resyncMs: 200,
    launcherTimeoutMs: 5_000,
    migrationAddress: o.migrationAddress,
    migrationConfig: o.migrationConfig,
    migrationProxy: o.migrationProxy,
    log: debug(`handler ${name}`),
  });
  try {
    await handler.start();
  } catch (e) {
    rmSync(root, { recursive: true, force: true });
    throw e;
  }
  return { name, root, host, handler };
}

/**
 * An in-process launcher (not yet started) for VMI `vmi` (namespace, name, uid) in pod
 * `podUid` on node `n`, on `driver`, to serve on the pod's sockets dir; with that dir.
 */
export function podLauncher(
  n: FakeNode,
  podUid: string,
  vmi: { namespace: string; name: string; uid: string },
  driver: () => HypervisorDriver,
  label = podUid,
): { launcher: VirtLauncher; dir: string } {
  const real = podEmptyDirPath(join(n.root, 'pods'), podUid, 'sockets');
  mkdirSync(real, { recursive: true });
  const dir = shortDir(real);
  const launcher = new VirtLauncher({
    ...vmi,
    gracePeriodSeconds: 5,
    socketDir: dir,
    connectDriver: async () => driver(),
    syncOptions: { useEmulation: true },
    finalWaitMs: 60_000,
    migrationPollMs: 20,
    log: debug(`launcher ${label}`),
  });
  return { launcher, dir };
}
