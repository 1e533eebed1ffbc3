/**
 * The thin component binaries in examples/bin run, so they cannot rot: each prints its
 * usage with --help, and each starts for real through tsx (which resolves the
 * `kubevirt-ts/*` imports to the sources, as a user's build would to dist): the
 * virt-controller and virt-handler on an embedded store's socket until they say
 * "running", the launcher on the fake driver until it serves its socket; then SIGTERM
 * and a clean exit. The type check (`npm run typecheck`, tsconfig includes examples/)
 * covers them too.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderLauncherArgs } from '../../src/controllers/common/launcher-args';
import { LAUNCHER_SOCKET } from '../../src/controllers/launcher-protocol/paths';
import { type EmbeddedServer, serveEmbeddedStore } from '../../src/controllers/runtime/embedded/server';
import { EmbeddedStore } from '../../src/controllers/runtime/embedded/store';
import { daemonAvailable, daemonMissing } from '../drivers/libvirt-driver/support';
import { integration } from '../support/integration';
import { waitFor } from '../support/wait';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const tsx = join(repo, 'node_modules', '.bin', 'tsx');
const bin = (name: string) => join(repo, 'examples', 'bin', `${name}.ts`);

/** A started example binary and everything it printed so far. */
interface Started {
  child: ChildProcess;
  out: () => string;
  exited: Promise<number | null>;
  /** The process has exited. */
  gone: () => boolean;
}

function start(name: string, args: string[]): Started {
  const child = spawn(tsx, [bin(name), ...args], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  let gone = false;
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      gone = true;
      resolve(code);
    }),
  );
  return { child, out: () => out, exited, gone: () => gone };
}

describe('examples/bin --help', () => {
  for (const [name, flag] of [
    ['virt-controller', '--store-socket'],
    ['virt-handler', '--node-name'],
    ['virt-launcher', '--hypervisor'],
  ] as const) {
    it(`${name} prints its usage and exits 0`, () => {
      const r = spawnSync(tsx, [bin(name), '--help'], { cwd: repo, encoding: 'utf8', timeout: 120_000 });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^usage: ${name} `));
      expect(r.stdout).toContain(flag);
    }, 150_000);
  }
});

describe('examples/bin start for real', () => {
  let dir = '';
  let store: EmbeddedStore;
  let server: EmbeddedServer;
  const socket = () => join(dir, 'store.sock');

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kvts-example-bins-'));
    store = await EmbeddedStore.open({ namespaces: ['default', 'kubevirt'] });
    server = await serveEmbeddedStore(store, socket());
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function runUntil(s: Started, ready: () => boolean, what: string): Promise<void> {
    try {
      // An early exit is a failure at once, not a wait for the timeout.
      await waitFor(what, () => ready() || s.gone(), 90_000, 100).catch((e: Error) => {
        throw new Error(`${e.message}; output so far:\n${s.out()}`);
      });
      if (!ready()) throw new Error(`${what}: the process exited first; output:\n${s.out()}`);
    } finally {
      s.child.kill('SIGTERM');
    }
    expect(await s.exited, s.out()).toBe(0);
  }

  it('virt-controller runs on the embedded store, then stops on SIGTERM', async () => {
    const s = start('virt-controller', ['--store-socket', socket()]);
    await runUntil(s, () => s.out().includes('virt-controller: running'), 'virt-controller running');
  }, 150_000);

  it.runIf(integration('example virt-handler', daemonAvailable, daemonMissing))(
    'virt-handler runs on the embedded store (emulation driver on libvirtd), then stops on SIGTERM',
    async () => {
      const s = start('virt-handler', [
        '--node-name',
        `example-node-${process.pid}`,
        '--store-socket',
        socket(),
        '--pods-root',
        join(dir, 'pods'),
        '--notify-socket',
        join(dir, 'notify.sock'),
      ]);
      await runUntil(
        s,
        () => s.out().includes(`virt-handler example-node-${process.pid}: running`),
        'virt-handler running',
      );
    },
  );

  it('virt-launcher serves its socket on the fake driver, then exits on SIGTERM', async () => {
    const share = join(dir, 'a-share-dir-deep-enough-for-a-short-link');
    const args = renderLauncherArgs({
      namespace: 'default',
      name: 'example-launcher',
      uid: `uid-example-${process.pid}`,
      gracePeriodSeconds: 5,
      shareDir: share,
      ephemeralDiskDir: join(dir, 'ephemeral'),
      containerDiskDir: join(dir, 'container-disks'),
      hookSidecars: 0,
      hypervisor: 'fake',
      allowEmulation: true,
      keepAfterFailure: false,
      runAsNonRoot: false,
    });
    // No sockets dir yet, and deep enough that the launcher reaches it through a
    // shortDir() link: the launcher creates the link's target itself.
    const s = start('virt-launcher', args);
    await runUntil(s, () => existsSync(join(share, 'sockets', LAUNCHER_SOCKET)), 'the launcher socket');
  }, 150_000);
});
