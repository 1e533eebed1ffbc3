/**
 * The launcher's live-migration RPCs over real unix-socket gRPC servers, with two
 * launchers on two fake hosts: SyncMigrationTarget prepares the target (domain XML kept
 * and written to the sockets dir), MigrateVirtualMachine moves the running guest (no
 * reboot) and both domain reports carry upstream's migration metadata, Cancel aborts a
 * running job and the guest stays, a job that makes no progress is aborted after
 * ProgressTimeout, an unreachable target fails the migration, and what cannot be done
 * is refused with a gRPC status naming the VMI.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api';
import type { LauncherDomain } from '../../../src/controllers/launcher-protocol/domain-report';
import { MIGRATION_TARGET_XML } from '../../../src/controllers/launcher-protocol/paths';
import {
  FakeDriver,
  type FakeDriverOptions,
  FakeHost,
  type HypervisorDriver,
  registerFakeHost,
} from '../../../src/drivers';
import { waitFor } from '../../support/wait';
import { type FakeLauncher, fakeLauncherVmi, startFakeLauncher } from './fake-launcher';
import { failure } from './rpc-failure';

const vmi = (migrationUid = 'mig-1'): VirtualMachineInstance => ({
  ...fakeLauncherVmi(),
  status: { migrationState: { migrationUid, targetNodeAddress: 'node2' } },
});

describe('launcher live migration (fake hosts)', () => {
  const sides: FakeLauncher[] = [];
  let unregister: () => void;
  let source: FakeLauncher;
  let target: FakeLauncher;

  async function side(host: FakeHost, driver: () => HypervisorDriver): Promise<FakeLauncher> {
    const s = await startFakeLauncher({
      host,
      driver,
      notify: true,
      dirPrefix: 'kvts-mig-',
      launcher: { finalWaitMs: 60_000, migrationPollMs: 20 },
    });
    sides.push(s);
    return s;
  }

  async function pair(migration: FakeDriverOptions['migration'] = {}): Promise<void> {
    const a = new FakeHost();
    const b = new FakeHost();
    unregister = registerFakeHost('fake://node2', b);
    source = await side(a, () => new FakeDriver({ host: a, migration }));
    target = await side(b, () => new FakeDriver({ host: b }));
    await source.client.syncVirtualMachine(vmi());
  }

  const report = async (s: FakeLauncher) => (await s.client.getDomain()) as LauncherDomain;

  beforeEach(() => {
    sides.length = 0;
  });

  afterEach(async () => {
    unregister?.();
    for (const s of sides) await s.close();
  });

  it('moves the running guest to the prepared target without a reboot; both sides report the migration', async () => {
    await pair();
    const before = source.host.domains.get('ns1_vm1')?.info;
    await target.client.syncMigrationTarget(vmi());
    const xml = readFileSync(join(target.dir, MIGRATION_TARGET_XML), 'utf8');
    expect(JSON.parse(xml)).toEqual({ fakeDomain: 'ns1_vm1', vmiUid: 'uid-1' });
    expect(target.launcher.preparedMigrationXml).toBe(xml);

    await source.client.migrateVirtualMachine(vmi(), {
      Bandwidth: '64Mi',
      AllowAutoConverge: true,
      TargetURI: 'fake://node2',
      TargetDomainXML: xml,
    });
    // The start is reported to the node agent at once, the guest still running here (not
    // only once libvirt's view of the domain changes): the agent records startTimestamp.
    const started = await waitFor('an event with the migration under way', async () =>
      source.events.find((e) => {
        const d = e.domain as LauncherDomain | undefined;
        return d?.migration?.role === 'source' && !d.migration.endTimestamp;
      }),
    );
    expect(started.domain).toMatchObject({ state: 'running', migration: { uid: 'mig-1' } });
    // The job's result and the domain's departure reach the report separately: wait for both.
    const src = await waitFor('source migration to end and the guest to leave', async () => {
      const d = await report(source);
      return d.migration?.endTimestamp && d.finished ? d : undefined;
    });
    expect(src.migration).toMatchObject({
      uid: 'mig-1',
      role: 'source',
      mode: 'PreCopy',
      completed: true,
      targetUri: 'fake://node2',
    });
    expect(src.migration?.failed).toBeUndefined();
    expect(src.migration?.abortStatus).toBeUndefined();
    expect(src).toMatchObject({ state: 'shutoff', reason: 'migrated', finished: true });
    expect(source.host.domains.has('ns1_vm1')).toBe(false);

    const tgt = await waitFor('target to report the guest', async () => {
      const d = await report(target);
      return d?.state === 'running' && d.migration?.completed ? d : undefined;
    });
    expect(tgt).toMatchObject({
      reason: 'migrated',
      uuid: before?.uuid,
      bootId: before?.bootId,
      finished: false,
    });
    expect(tgt.migration).toMatchObject({ uid: 'mig-1', role: 'target', completed: true });
    expect(target.host.domains.get('ns1_vm1')?.boots).toBe(1);

    // The same migration cannot run twice.
    const again = await failure(
      source.client.migrateVirtualMachine(vmi(), { TargetURI: 'fake://node2', TargetDomainXML: xml }),
    );
    expect(again.code).toBe(status.FAILED_PRECONDITION);
    expect(again.message).toMatch(
      /^MigrateVirtualMachine: VirtualMachineInstance ns1\/vm1: migration job mig-1 already executed, finished at .+, failed: false, abortStatus: $/,
    );
  });

  it('a sync while the guest is being sent, or after it left, never defines it again on the source', async () => {
    await pair({ durationMs: 600 });
    await target.client.syncMigrationTarget(vmi());
    const xml = readFileSync(join(target.dir, MIGRATION_TARGET_XML), 'utf8');
    await source.client.migrateVirtualMachine(vmi(), { TargetURI: 'fake://node2', TargetDomainXML: xml });
    // The race the handler met on the two-node cluster: the domain is already gone from the
    // source's hypervisor (the migration's end undefines it) before the launcher has seen
    // the job end, and a sync (a NIC hotplug's) arrives.
    source.host.domains.delete('ns1_vm1');
    await source.client.syncVirtualMachine(vmi());
    expect(source.host.domains.has('ns1_vm1')).toBe(false);
    await waitFor('the migration to end', async () => (await report(source)).migration?.endTimestamp);
    await source.client.syncVirtualMachine(vmi());
    expect(source.host.domains.has('ns1_vm1')).toBe(false);
  });

  it("a target runs network phase 2 before preparing (as upstream's preStartHook): the prepared domain is of the VMI it returns", async () => {
    const seen: string[] = [];
    const host = new FakeHost();
    const t = await startFakeLauncher({
      host,
      driver: () => new FakeDriver({ host }),
      dirPrefix: 'kvts-mig-',
      launcher: {
        prepareNetwork: async (v) => {
          seen.push(v.status?.migrationState?.migrationUid ?? '');
          return { ...v, metadata: { ...v.metadata, uid: 'uid-after-network' } };
        },
      },
    });
    sides.push(t);
    await t.client.syncMigrationTarget(vmi('mig-net'));
    expect(seen).toEqual(['mig-net']);
    expect(JSON.parse(t.launcher.preparedMigrationXml ?? '{}')).toMatchObject({
      vmiUid: 'uid-after-network',
    });
  });

  it('CancelVirtualMachineMigration aborts the running job; the guest keeps running on the source', async () => {
    await pair({ durationMs: 600_000 });
    await target.client.syncMigrationTarget(vmi());
    await source.client.migrateVirtualMachine(vmi(), { TargetURI: 'fake://node2' });
    await source.client.cancelVirtualMachineMigration(vmi());
    const src = await waitFor('abort to finish', async () => {
      const d = await report(source);
      return d.migration?.endTimestamp ? d : undefined;
    });
    expect(src.migration).toMatchObject({
      failed: true,
      abortStatus: 'Succeeded',
      failureReason: 'Live migration aborted',
    });
    expect(src.migration?.completed).toBeUndefined();
    expect(src).toMatchObject({ state: 'running', finished: false });
    expect(source.host.domains.get('ns1_vm1')?.info.state).toBe('running');
    expect(target.host.domains.has('ns1_vm1')).toBe(false);

    const notMigrating = await failure(source.client.cancelVirtualMachineMigration(vmi()));
    expect(notMigrating.code).toBe(status.FAILED_PRECONDITION);
    expect(notMigrating.message).toBe(
      'CancelVirtualMachineMigration: VirtualMachineInstance ns1/vm1: failed to cancel migration - vmi is not migrating',
    );
  });

  it('a job that makes no progress is aborted after ProgressTimeout', async () => {
    await pair({ durationMs: 600_000, stalls: true });
    await source.client.migrateVirtualMachine(vmi(), { TargetURI: 'fake://node2', ProgressTimeout: 1 });
    const src = await waitFor('progress timeout', async () => {
      const d = await report(source);
      return d.migration?.endTimestamp ? d : undefined;
    });
    expect(src.migration?.failed).toBe(true);
    expect(src.migration?.failureReason).toMatch(/^Live migration stuck for \d+ sec and has been aborted$/);
    expect(src.migration?.abortStatus).toBeUndefined();
    expect(src.migration?.dataTotal).toBe(64 * 1024 * 1024);
    expect(src.migration?.dataRemaining).toBe(64 * 1024 * 1024);
    expect(source.host.domains.get('ns1_vm1')?.info.state).toBe('running');
  });

  it('AllowWorkloadDisruption pauses the guest at the completion timeout; a cancel resumes it', async () => {
    await pair({ durationMs: 600_000 });
    await source.client.migrateVirtualMachine(vmi(), {
      TargetURI: 'fake://node2',
      CompletionTimeoutPerGiB: 1,
      AllowWorkloadDisruption: true,
    });
    const paused = await waitFor('the guest paused to converge', async () => {
      const d = await report(source);
      return d.migration?.mode === 'Paused' && d.state === 'paused' ? d : undefined;
    });
    expect(paused.migration?.endTimestamp).toBeUndefined();
    expect(source.host.domains.get('ns1_vm1')?.info).toMatchObject({ state: 'paused', reason: 'user' });
    await source.client.cancelVirtualMachineMigration(vmi());
    const resumed = await waitFor('the guest resumed after the abort', async () => {
      const d = await report(source);
      return d.migration?.endTimestamp && d.state === 'running' ? d : undefined;
    });
    expect(resumed.migration).toMatchObject({ mode: 'Paused', failed: true, abortStatus: 'Succeeded' });
  });

  it('AllowPostCopy with AllowWorkloadDisruption switches to post-copy at the completion timeout: the guest arrives', async () => {
    await pair({ durationMs: 600_000 });
    await target.client.syncMigrationTarget(vmi());
    await source.client.migrateVirtualMachine(vmi(), {
      TargetURI: 'fake://node2',
      CompletionTimeoutPerGiB: 1,
      AllowPostCopy: true,
      AllowWorkloadDisruption: true,
    });
    // Before the timeout the job runs in pre-copy.
    expect((await report(source)).migration?.mode).toBe('PreCopy');
    const done = await waitFor('the migration completed', async () => {
      const d = await report(source);
      return d.migration?.endTimestamp ? d : undefined;
    });
    expect(done.migration).toMatchObject({ mode: 'PostCopy', completed: true });
    expect(done.migration?.failed).toBeUndefined();
    expect(target.host.domains.get('ns1_vm1')?.info.state).toBe('running');
    expect(source.host.domains.has('ns1_vm1')).toBe(false);
  });

  it('MaxDowntimeMs reaches libvirt as soon as the job runs; without AllowPostCopy no post-copy', async () => {
    await pair({ durationMs: 600_000 });
    await source.client.migrateVirtualMachine(vmi(), { TargetURI: 'fake://node2', MaxDowntimeMs: 120 });
    const job = await waitFor('the max downtime on the job', () => {
      const j = source.host.domains.get('ns1_vm1')?.migration;
      return j?.maxDowntimeMs ? j : undefined;
    });
    expect(job.maxDowntimeMs).toBe(120);
    expect(job.postCopyAllowed).toBe(false);
    await source.client.cancelVirtualMachineMigration(vmi());
    await waitFor('the abort', async () => (await report(source)).migration?.endTimestamp);
    expect(job.postCopy).toBe(false);
  });

  it('without AllowWorkloadDisruption the completion timeout aborts', async () => {
    await pair({ durationMs: 600_000 });
    await source.client.migrateVirtualMachine(vmi(), {
      TargetURI: 'fake://node2',
      CompletionTimeoutPerGiB: 1,
    });
    const d = await waitFor('the abort', async () => {
      const r = await report(source);
      return r.migration?.endTimestamp ? r : undefined;
    });
    expect(d.migration).toMatchObject({
      mode: 'PreCopy',
      failed: true,
      failureReason: 'Live migration is not completed after 1 sec and has been aborted',
    });
    expect(d.state).toBe('running');
  });

  it('an unreachable target fails the migration with the driver error; the guest stays', async () => {
    await pair();
    await source.client.migrateVirtualMachine(vmi(), { TargetURI: 'fake://nowhere' });
    const src = await waitFor('failure', async () => {
      const d = await report(source);
      return d.migration?.endTimestamp ? d : undefined;
    });
    expect(src.migration).toMatchObject({
      failed: true,
      failureReason:
        'Live migration failed: domain ns1_vm1: migrate to fake://nowhere failed: unable to connect to fake://nowhere: no fake host there',
    });
    expect(src.state).toBe('running');
  });

  it('refuses requests it cannot run, naming the VMI and the field', async () => {
    await pair();
    const noUid = structuredClone(vmi());
    delete noUid.status;
    const a = await failure(source.client.migrateVirtualMachine(noUid, {}));
    expect(a.code).toBe(status.INVALID_ARGUMENT);
    expect(a.message).toBe(
      'MigrateVirtualMachine: VirtualMachineInstance ns1/vm1: status.migrationState.migrationUid: required to migrate (no migration is in progress)',
    );
    const b = await failure(source.client.migrateVirtualMachine(vmi(), { Bandwidth: 'lots' }));
    expect(b.message).toBe(
      'MigrateVirtualMachine: VirtualMachineInstance ns1/vm1: migration options.Bandwidth: "lots" is not a non-negative quantity',
    );
    const m = await failure(source.client.migrateVirtualMachine(vmi(), { MaxDowntimeMs: 0 }));
    expect(m.message).toBe(
      'MigrateVirtualMachine: VirtualMachineInstance ns1/vm1: migration options.MaxDowntimeMs: must be a positive integer (milliseconds)',
    );
    const c = await failure(target.client.syncMigrationTarget(noUid));
    expect(c.code).toBe(status.INVALID_ARGUMENT);
    expect(c.message).toContain('status.migrationState.migrationUid: required to prepare a migration target');
    // The target of a running guest cannot prepare: a domain of that name runs there.
    const d = await failure(source.client.syncMigrationTarget(vmi()));
    expect(d.code).toBe(status.FAILED_PRECONDITION);
    expect(d.message).toBe(
      'SyncMigrationTarget: VirtualMachineInstance ns1/vm1: failed to prepare migration target pod: domain ns1_vm1: cannot prepare an incoming migration, a domain of that name is running here',
    );
  });

  it('a driver without migration answers UNIMPLEMENTED naming the VMI', async () => {
    const host = new FakeHost();
    const noMigration = (): HypervisorDriver => {
      const d = new FakeDriver({ host });
      return new Proxy(d, {
        get: (t, p) => (p === 'migration' ? undefined : Reflect.get(t, p, t)),
      });
    };
    const s = await side(host, noMigration);
    for (const [rpc, call] of [
      ['MigrateVirtualMachine', () => s.client.migrateVirtualMachine(vmi(), {})],
      ['SyncMigrationTarget', () => s.client.syncMigrationTarget(vmi())],
      ['CancelVirtualMachineMigration', () => s.client.cancelVirtualMachineMigration(vmi())],
    ] as const) {
      const err = await failure(call());
      expect(err.code).toBe(status.UNIMPLEMENTED);
      expect(err.message).toBe(
        `${rpc}: VirtualMachineInstance ns1/vm1: live migration is not available: the fake driver cannot migrate`,
      );
    }
  });
});
