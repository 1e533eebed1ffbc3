/**
 * A real live migration on this one host: the tiny guest boots under TCG on the system
 * libvirtd through a source launcher, a target launcher on a second libvirtd (private
 * mount and UTS namespace, its own host UUID; test/support/second-libvirtd.ts) prepares
 * the domain for its own pod paths (SyncMigrationTarget), and the source launcher
 * migrates the running guest there (MigrateVirtualMachine, peer to peer); the source
 * daemon's connection to the target daemon goes through two handlers' migration proxies
 * (a unix socket, mutual TLS with a test CA over loopback, the target daemon's socket), as
 * upstream's; QEMU's stream goes over loopback TCP (on one host the target QEMU would have
 * to listen on the source socket's own path). Asserted: the
 * guest booted once and keeps running (its shell answers on the target launcher's
 * console), the source QEMU process is gone and the target daemon runs one, both
 * launchers report the migration. Serial: it starts and stops its own daemon.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LauncherDomain } from '../../src/controllers/launcher-protocol/domain-report';
import { CONSOLE_SOCKET, MIGRATION_TARGET_XML } from '../../src/controllers/launcher-protocol/paths';
import { MigrationProxyManager } from '../../src/controllers/virt-handler/migration-proxy';
import {
  makeLauncherRoot,
  type RealLauncher,
  realLauncherBlocker,
  startRealLauncher,
  tinyGuestImageStore,
  SYSTEM_URI as URI,
} from '../controllers/virt-launcher/real-launcher';
import { tinyGuestLauncherVmi } from '../controllers/virt-launcher/tiny-guest-vmi';
import { BOOT_MARKER, SerialConsole } from '../support/guest';
import { integration } from '../support/integration';
import {
  type SecondLibvirtd,
  secondLibvirtdUnavailable,
  startSecondLibvirtd,
} from '../support/second-libvirtd';
import { type CertFiles, issue, makeCa } from '../support/tls-certs';
import { waitFor } from '../support/wait';
import { processAlive as isAlive } from './node-harness';

const blocker = realLauncherBlocker() ?? secondLibvirtdUnavailable();
const run = integration('live migration between two libvirtds', !blocker, blocker ?? '');

const pidIn = (file: string) => Number(readFileSync(file, 'utf8').trim());

describe.runIf(run)('live migration of a running guest to a second libvirtd on this host', () => {
  const ns = 'kvts-e2e';
  const name = `mig-${process.pid}`;
  const uid = `uid-mig-${process.pid}`;
  const dom = `${ns}_${name}`;
  const vmi = (attempt = 'moved') => ({
    ...tinyGuestLauncherVmi(ns, name, uid),
    status: { migrationState: { migrationUid: `migration-${attempt}-${process.pid}` } },
  });
  const report = async (p: RealLauncher) => (await p.client.getDomain()) as LauncherDomain;
  let root = '';
  let daemon: SecondLibvirtd | undefined;
  let source: RealLauncher;
  let target: RealLauncher;
  let sourceConsole: SerialConsole | undefined;
  let targetConsole: SerialConsole | undefined;

  /** One launcher "pod" under the shared root: its own private and sockets directories, on the given daemon. */
  const pod = (podDir: string, env: NodeJS.ProcessEnv = {}) =>
    startRealLauncher({
      ns,
      name,
      uid,
      root,
      podDir,
      gracePeriodSeconds: 5,
      env,
      finalWaitMs: 600_000,
      migrationPollMs: 100,
    });

  beforeAll(async () => {
    root = makeLauncherRoot('kvts-mig-');
    tinyGuestImageStore(root);
    daemon = await startSecondLibvirtd();
    source = await pod('source');
    target = await pod('target', { KUBEVIRT_TS_LIBVIRT_SOCKET: daemon.socketPath });
    await source.client.syncVirtualMachine(vmi());
    sourceConsole = await SerialConsole.connect(join(source.sockets, CONSOLE_SOCKET));
    await sourceConsole.waitFor(BOOT_MARKER, 120_000);
  }, 180_000);

  afterAll(async () => {
    sourceConsole?.close();
    targetConsole?.close();
    // Each close also forgets the domain on the system libvirtd, wherever the guest ended up.
    for (const p of [source, target]) await p?.close();
    await daemon?.stop();
    if (root) rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it('the daemons are two hosts to libvirt: different host UUIDs', () => {
    const caps = spawnSync('virsh', ['-c', URI, 'capabilities'], { encoding: 'utf8' }).stdout;
    const systemUuid = /<host>\s*<uuid>([^<]+)<\/uuid>/.exec(caps)?.[1];
    expect(systemUuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(daemon?.hostUuid).not.toBe(systemUuid);
  });

  it('cancels a slow real migration: the guest stays on the source, nothing is left on the target', async () => {
    const sourcePid = pidIn(`/run/libvirt/qemu/${dom}.pid`);
    await target.client.syncMigrationTarget(vmi('cancelled'));
    const xml = readFileSync(join(target.sockets, MIGRATION_TARGET_XML), 'utf8');
    await source.client.migrateVirtualMachine(vmi('cancelled'), {
      TargetURI: daemon?.uri,
      TargetDomainXML: xml,
      MigrateURI: 'tcp://127.0.0.1',
      // 1 MiB/s: the guest's memory takes tens of seconds, long enough to cancel.
      Bandwidth: '1Mi',
    });
    const moving = await waitFor(
      'the migration job to report progress',
      async () => {
        const d = await report(source);
        return d.migration?.dataTotal ? d : undefined;
      },
      30_000,
      100,
    );
    // libvirt's job figures: the guest's 128 MiB of RAM (plus device state) to move.
    expect(moving.migration?.dataTotal).toBeGreaterThanOrEqual(128 * 1024 * 1024);
    expect(moving.migration?.endTimestamp).toBeUndefined();
    await source.client.cancelVirtualMachineMigration(vmi('cancelled'));
    const ended = await waitFor(
      'the abort to finish',
      async () => {
        const d = await report(source);
        return d.migration?.endTimestamp ? d : undefined;
      },
      60_000,
      100,
    );
    expect(ended.migration).toMatchObject({
      failed: true,
      abortStatus: 'Succeeded',
      failureReason: 'Live migration aborted',
    });
    expect(ended).toMatchObject({ state: 'running', finished: false });
    expect(pidIn(`/run/libvirt/qemu/${dom}.pid`)).toBe(sourcePid);
    expect(isAlive(sourcePid)).toBe(true);
    const onTarget = spawnSync('virsh', ['-c', daemon?.uri ?? '', 'list', '--all', '--name'], {
      encoding: 'utf8',
    });
    expect(onTarget.status).toBe(0);
    expect(onTarget.stdout.trim()).toBe('');
  }, 120_000);

  it('moves the running guest: booted once, its shell answers on the target, one QEMU on the target', async () => {
    const sourcePid = pidIn(`/run/libvirt/qemu/${dom}.pid`);
    expect(isAlive(sourcePid)).toBe(true);

    await target.client.syncMigrationTarget(vmi());
    // The handlers' migration proxies: the target's TLS listener leads to its daemon, the
    // source's socket to that listener.
    const certDir = mkdtempSync(join(tmpdir(), 'kvts-migca-'));
    const ca: CertFiles = makeCa(certDir, 'ca');
    const tls = (c: CertFiles) => () => ({
      cert: readFileSync(c.cert),
      key: readFileSync(c.key),
      ca: readFileSync(ca.cert),
    });
    const proxies = (cn: string, sans?: string[]) =>
      new MigrationProxyManager({
        bindHost: '127.0.0.1',
        serverTls: tls(issue(certDir, ca, `${cn}-node`, 'kubevirt.io:system:node:virt-handler', sans)),
        clientTls: tls(issue(certDir, ca, `${cn}-client`, 'kubevirt.io:system:client:virt-handler')),
        disableTls: () => false,
      });
    const targetProxies = proxies('target', ['IP:127.0.0.1']);
    const sourceProxies = proxies('source');
    const ports = await targetProxies.startTarget(uid, [{ port: 0, unixPath: daemon?.socketPath ?? '' }]);
    const files = await sourceProxies.startSource(uid, '127.0.0.1', ports, certDir);
    const proxiedUri = `qemu+unix:///system?socket=${files[0]}`;
    const xml = readFileSync(join(target.sockets, MIGRATION_TARGET_XML), 'utf8');
    // The target's domain points at the target pod's own directories.
    expect(xml).toContain(join(root, 'target', 'private'));
    expect(xml).not.toContain(join(root, 'source', 'private'));

    await source.client.migrateVirtualMachine(vmi(), {
      TargetURI: proxiedUri,
      TargetDomainXML: xml,
      // The target daemon's host name exists only in its UTS namespace: send the stream over loopback.
      MigrateURI: 'tcp://127.0.0.1',
      // Exercise the options on a real QEMU: throttling allowed, memory over two
      // connections, and at 16 MiB/s the copy outlasts its 1 s budget (1 s per GiB, the
      // guest rounds up to 1 GiB), so the launcher pauses the guest to converge
      // (AllowWorkloadDisruption) and libvirt resumes it on the target.
      Bandwidth: '16Mi',
      AllowAutoConverge: true,
      ParallelMigrationThreads: 2,
      CompletionTimeoutPerGiB: 1,
      AllowWorkloadDisruption: true,
      ProgressTimeout: 150,
    });
    const src = await waitFor(
      'the source to report the migration ended',
      async () => {
        // The job's result and the domain's departure reach the report separately.
        const d = (await source.client.getDomain()) as LauncherDomain;
        return d.migration?.endTimestamp && (d.migration.failed || d.finished) ? d : undefined;
      },
      120_000,
      100,
    );
    expect(src.migration?.failureReason).toBeUndefined();
    expect(src.migration).toMatchObject({
      role: 'source',
      completed: true,
      mode: 'Paused',
      targetUri: proxiedUri,
    });
    // libvirt's peer-to-peer connection went through both proxies.
    const carried = sourceProxies.bytes(uid);
    expect(carried.out).toBeGreaterThan(1000);
    expect(carried.in).toBeGreaterThan(1000);
    expect(targetProxies.bytes(uid).out).toBeGreaterThan(1000);
    await sourceProxies.shutdown();
    await targetProxies.shutdown();
    rmSync(certDir, { recursive: true, force: true });
    expect(src).toMatchObject({ state: 'shutoff', reason: 'migrated', finished: true });

    const tgt = await waitFor(
      'the target launcher to report the running guest with its console',
      async () => {
        const d = (await target.client.getDomain()) as LauncherDomain;
        return d?.state === 'running' && d.console && d.migration?.completed ? d : undefined;
      },
      60_000,
      100,
    );
    expect(tgt).toMatchObject({ name: dom, reason: 'migrated', finished: false });
    expect(tgt.migration).toMatchObject({ role: 'target', completed: true });

    // The guest did not reboot: one boot marker in all, and its shell answers after the move.
    targetConsole = await SerialConsole.connect(join(target.sockets, CONSOLE_SOCKET));
    expect(await targetConsole.run('echo answered-$((6*7)) after the move')).toContain(
      'answered-42 after the move',
    );
    const boots =
      (sourceConsole?.output.split(BOOT_MARKER).length ?? 1) -
      1 +
      (targetConsole.output.split(BOOT_MARKER).length - 1);
    expect(boots).toBe(1);

    // The source QEMU is gone; the second daemon runs the one QEMU of this guest.
    await waitFor('the source QEMU to exit', () => !isAlive(sourcePid), 30_000, 100);
    expect(spawnSync('virsh', ['-c', URI, 'domstate', dom]).status).not.toBe(0);
    const targetPidFile = join(daemon?.dir ?? '', 'run', 'qemu', `${dom}.pid`);
    expect(existsSync(targetPidFile)).toBe(true);
    const targetPid = pidIn(targetPidFile);
    expect(targetPid).not.toBe(sourcePid);
    expect(isAlive(targetPid)).toBe(true);
    const qemus = spawnSync('pgrep', ['-f', `guest=${dom},`], { encoding: 'utf8' })
      .stdout.trim()
      .split('\n');
    expect(qemus.map(Number)).toEqual([targetPid]);
  }, 240_000);
});
