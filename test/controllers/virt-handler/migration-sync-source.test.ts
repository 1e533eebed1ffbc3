/**
 * The source side of MigrationSync against a fake launcher client and a fake object
 * client: when it starts the migration and with what, what it writes while the guest
 * moves, the hand-over, a target that never reports the guest, a launcher refusal, and
 * the guest leaving before the launcher's job settled (not a guest that ended).
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { LauncherCommandError } from '../../../src/controllers/launcher-protocol/client';
import type {
  LauncherDomain,
  LauncherMigrationState,
} from '../../../src/controllers/launcher-protocol/domain-report';
import { NotFoundError } from '../../../src/controllers/runtime/errors';
import type { ObjectClient } from '../../../src/controllers/runtime/types';
import { type MigrationLauncher, MigrationSync } from '../../../src/controllers/virt-handler/migration-sync';
import { TARGET_DOMAIN_ANNOTATION } from '../../../src/controllers/virt-handler/migration-target-domain';

const NOW = new Date('2026-11-29T18:00:00Z');

function fixture(o: { annotation?: string; migrateError?: Error; nowMs?: number } = {}) {
  const calls: string[] = [];
  const writes: VirtualMachineInstance[] = [];
  const options: unknown[] = [];
  const launcher: MigrationLauncher = {
    getDomain: async () => undefined,
    syncMigrationTarget: async () => {
      calls.push('syncMigrationTarget');
    },
    migrateVirtualMachine: async (_vmi, opts) => {
      calls.push('migrateVirtualMachine');
      options.push(opts);
      if (o.migrateError) throw o.migrateError;
    },
    cancelVirtualMachineMigration: async () => {
      calls.push('cancelVirtualMachineMigration');
    },
    deleteVirtualMachine: async () => {
      calls.push('deleteVirtualMachine');
    },
  };
  const client = {
    get: async (_t: unknown, name: string) => {
      if (name !== 'tp') throw new NotFoundError(404, 'NotFound', `pods "${name}" not found`);
      return {
        metadata: {
          name: 'tp',
          labels: { 'kubevirt.io/migrationJobUID': 'm1' },
          annotations: o.annotation === undefined ? {} : { [TARGET_DOMAIN_ANNOTATION]: o.annotation },
        },
      };
    },
  } as unknown as ObjectClient;
  const sync = new MigrationSync({
    nodeName: 'n1',
    client,
    podsOf: () => [],
    launcherReady: () => true,
    launcher: async () => launcher,
    dropLauncher: async (uid) => {
      calls.push(`drop ${uid}`);
    },
    readTargetXml: async () => undefined,
    write: async (_old, next) => {
      writes.push(next);
    },
    migrationConfig: () => ({
      bandwidthPerMigration: '0Mi',
      progressTimeout: 150,
      completionTimeoutPerGiB: 150,
    }),
    targetReadyTimeoutMs: 60_000,
    now: () => new Date(o.nowMs ?? NOW.getTime()),
    log: () => {},
  });
  return { sync, calls, writes, options };
}

const vmi = (ms: Record<string, unknown>): VirtualMachineInstance => ({
  metadata: { name: 'v', namespace: 'ns', uid: 'u', labels: { 'kubevirt.io/nodeName': 'n1' } },
  spec: { domain: { devices: {} } },
  status: {
    phase: 'Running',
    nodeName: 'n1',
    migrationState: { migrationUid: 'm1', sourceNode: 'n1', targetNode: 'n2', targetPod: 'tp', ...ms },
  },
});
const domain = (
  state: LauncherDomain['state'],
  migration?: Partial<LauncherMigrationState>,
  finished = false,
) =>
  ({
    name: 'ns_v',
    uuid: 'x',
    state,
    reason: '',
    bootId: 'b',
    vcpus: 1,
    memoryKiB: 65536,
    vmiUid: 'u',
    finished,
    migration: migration && {
      uid: 'm1',
      role: 'source',
      startTimestamp: '2026-11-29T17:59:50Z',
      mode: 'PreCopy',
      ...migration,
    },
  }) as LauncherDomain;

describe('MigrationSync source side', () => {
  it('waits for the target address, then for its XML on the target pod, then starts once', async () => {
    let f = fixture();
    expect(await f.sync.syncSource(vmi({}), domain('running'), 'pod1')).toMatchObject({ handled: false });
    expect(f.calls).toEqual([]);

    // Address there, XML not yet published: wait.
    expect(
      await f.sync.syncSource(vmi({ targetNodeAddress: '10.0.0.7' }), domain('running'), 'pod1'),
    ).toEqual({
      handled: true,
      again: 500,
    });
    expect(f.calls).toEqual([]);

    f = fixture({ annotation: '<domain>target</domain>' });
    expect(
      await f.sync.syncSource(vmi({ targetNodeAddress: '10.0.0.7' }), domain('running'), 'pod1'),
    ).toEqual({
      handled: true,
      again: 200,
    });
    expect(f.calls).toEqual(['migrateVirtualMachine']);
    expect(f.options[0]).toMatchObject({
      Bandwidth: '0Mi',
      ProgressTimeout: 150,
      CompletionTimeoutPerGiB: 150,
      MigrateURI: 'tcp://10.0.0.7',
      TargetDomainXML: '<domain>target</domain>',
    });
    // Once the launcher reports the job, it is never started again.
    const step = await f.sync.syncSource(
      vmi({ targetNodeAddress: '10.0.0.7' }),
      domain('running', {}),
      'pod1',
    );
    expect(step.handled).toBe(false);
    expect(f.calls).toEqual(['migrateVirtualMachine']);
    expect(step.apply?.(vmi({})).status?.migrationState).toMatchObject({
      startTimestamp: '2026-11-29T17:59:50Z',
      mode: 'PreCopy',
    });
  });

  it('a launcher that refuses (FAILED_PRECONDITION) fails the migration with its message', async () => {
    const f = fixture({
      annotation: '',
      migrateError: new LauncherCommandError(
        'MigrateVirtualMachine',
        'cannot migrate, the domain is paused',
        9,
      ),
    });
    const step = await f.sync.syncSource(vmi({ targetNodeAddress: '10.0.0.7' }), domain('running'), 'pod1');
    expect(step.handled).toBe(false);
    expect(step.apply?.(vmi({})).status?.migrationState).toMatchObject({
      completed: true,
      failed: true,
      failureReason: 'MigrateVirtualMachine: cannot migrate, the domain is paused',
      endTimestamp: '2026-11-29T18:00:00Z',
    });
  });

  it('the guest left before the job settled: no status from the finished domain, look again', async () => {
    const f = fixture();
    const step = await f.sync.syncSource(
      vmi({ targetNodeAddress: '10.0.0.7', startTimestamp: '2026-11-29T17:59:50Z' }),
      domain('shutoff', {}, true),
      'pod1',
    );
    expect(step).toEqual({ handled: true, again: 200 });
    expect(f.writes).toEqual([]);
  });

  it('job done, target not ready yet: records the end and waits; ready: hands over and releases the launcher', async () => {
    const done = domain('shutoff', { endTimestamp: '2026-11-29T17:59:58.5Z', completed: true }, true);
    let f = fixture();
    const base = { targetNodeAddress: '10.0.0.7', startTimestamp: '2026-11-29T17:59:50Z' };
    expect(await f.sync.syncSource(vmi(base), done, 'pod1')).toEqual({ handled: true, again: 1_000 });
    expect(f.writes[0].status?.migrationState?.endTimestamp).toBe('2026-11-29T17:59:58Z');
    expect(f.writes[0].status?.nodeName).toBe('n1');
    expect(f.calls).toEqual([]);

    f = fixture();
    const ready = {
      ...base,
      targetNodeDomainDetected: true,
      targetNodeDomainReadyTimestamp: '2026-11-29T17:59:59Z',
    };
    expect(await f.sync.syncSource(vmi(ready), done, 'pod1')).toEqual({ handled: true });
    expect(f.writes).toHaveLength(1);
    expect(f.writes[0].status?.nodeName).toBe('n2');
    expect(f.writes[0].metadata?.labels?.['kubevirt.io/nodeName']).toBe('n2');
    expect(f.writes[0].status?.migrationState).toMatchObject({
      completed: true,
      endTimestamp: '2026-11-29T17:59:58Z',
    });
    expect(f.calls).toEqual(['deleteVirtualMachine', 'drop pod1']);
  });

  it('a target that never reports the guest within the timeout fails the VMI (upstream)', async () => {
    const f = fixture({ nowMs: new Date('2026-11-29T18:01:00Z').getTime() });
    const done = domain('shutoff', { endTimestamp: '2026-11-29T17:59:58Z', completed: true }, true);
    await f.sync.syncSource(
      vmi({ targetNodeAddress: '10.0.0.7', startTimestamp: '2026-11-29T17:59:50Z' }),
      done,
      'p',
    );
    expect(f.writes[0].status?.phase).toBe('Failed');
    expect(f.writes[0].status?.migrationState).toMatchObject({
      completed: true,
      failed: true,
      failureReason:
        "The VirtualMachineInstance's domain was never observed on the target after the migration completed within the timeout period.",
    });
  });

  it('abortRequested before the job started: aborted without a call', async () => {
    const f = fixture();
    const step = await f.sync.syncSource(
      vmi({ targetNodeAddress: '10.0.0.7', abortRequested: true }),
      domain('running'),
      'p',
    );
    expect(f.calls).toEqual([]);
    expect(step.apply?.(vmi({})).status?.migrationState).toMatchObject({
      abortStatus: 'Succeeded',
      completed: true,
      failed: true,
      failureReason: 'Live migration aborted',
    });
  });
});
