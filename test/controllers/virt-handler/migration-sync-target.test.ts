/**
 * The target side of MigrationSync against a fake launcher client and a fake object
 * client: prepare once, publish the prepared XML on the target pod before advertising the
 * address, report the incoming domain (detected, then ready), fail on a launcher refusal,
 * and tell the target launcher to go after a failed migration.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import type { Pod } from '../../../src/controllers/common/pod';
import { LauncherCommandError } from '../../../src/controllers/launcher-protocol/client';
import type { LauncherDomain } from '../../../src/controllers/launcher-protocol/domain-report';
import type { ObjectClient } from '../../../src/controllers/runtime/types';
import { type MigrationLauncher, MigrationSync } from '../../../src/controllers/virt-handler/migration-sync';
import { TARGET_DOMAIN_ANNOTATION } from '../../../src/controllers/virt-handler/migration-target-domain';

const pod: Pod = {
  metadata: { name: 'tp', namespace: 'ns', uid: 'tp-uid', labels: { 'kubevirt.io/migrationJobUID': 'm1' } },
  spec: { nodeName: 'n2', containers: [{ name: 'compute', image: 'x' }] },
  status: { phase: 'Running' },
};

function fixture(
  o: {
    pods?: Pod[];
    ready?: boolean;
    prepareError?: Error;
    address?: string;
    podSetup?: () => string | undefined;
  } = {},
) {
  const events: string[] = [];
  const writes: VirtualMachineInstance[] = [];
  let domain: LauncherDomain | undefined;
  const launcher: MigrationLauncher = {
    getDomain: async () => domain,
    syncMigrationTarget: async () => {
      events.push('syncMigrationTarget');
      if (o.prepareError) throw o.prepareError;
    },
    migrateVirtualMachine: async () => {
      events.push('migrateVirtualMachine');
    },
    cancelVirtualMachineMigration: async () => {
      events.push('cancelVirtualMachineMigration');
    },
    deleteVirtualMachine: async () => {
      events.push('deleteVirtualMachine');
    },
  };
  const client = {
    get: async () => structuredClone(pod),
    update: async (_t: unknown, p: Pod) => {
      events.push(`annotate ${p.metadata?.annotations?.[TARGET_DOMAIN_ANNOTATION]}`);
      return p;
    },
  } as unknown as ObjectClient;
  const sync = new MigrationSync({
    nodeName: 'n2',
    client,
    podsOf: () => o.pods ?? [pod],
    launcherReady: () => o.ready ?? true,
    launcher: async () => launcher,
    dropLauncher: async (uid) => {
      events.push(`drop ${uid}`);
    },
    readTargetXml: async () => '<domain>for tp</domain>',
    write: async (_old, next) => {
      events.push('write');
      writes.push(next);
    },
    migrationAddress: 'address' in o ? o.address : 'qemu+tcp://n2/system',
    ...(o.podSetup
      ? {
          prepareTargetPod: async (_v: VirtualMachineInstance, p: Pod) => {
            events.push(`setup ${p.metadata?.uid}`);
            return o.podSetup?.();
          },
        }
      : {}),
    now: () => new Date('2026-11-29T18:00:00Z'),
    log: () => {},
  });
  return { sync, events, writes, setDomain: (d: LauncherDomain | undefined) => (domain = d) };
}

const vmi = (ms: Record<string, unknown> = {}): VirtualMachineInstance => ({
  metadata: { name: 'v', namespace: 'ns', uid: 'u' },
  spec: { domain: { devices: {} } },
  status: {
    phase: 'Running',
    nodeName: 'n1',
    migrationState: { migrationUid: 'm1', sourceNode: 'n1', targetNode: 'n2', targetPod: 'tp', ...ms },
  },
});
const dom = (state: LauncherDomain['state'], reason = '') =>
  ({ name: 'ns_v', state, reason, finished: false, vmiUid: 'u' }) as LauncherDomain;

describe('MigrationSync target side', () => {
  it('no target pod yet: nothing; launcher not serving yet: look again soon', async () => {
    expect(await fixture({ pods: [] }).sync.syncTarget(vmi())).toBeUndefined();
    const f = fixture({ ready: false });
    expect(await f.sync.syncTarget(vmi())).toBe(200);
    expect(f.events).toEqual([]);
  });

  it('prepares once, publishes the XML before the address, then reports the incoming domain', async () => {
    const f = fixture();
    expect(await f.sync.syncTarget(vmi())).toBe(1_000);
    expect(f.events).toEqual(['syncMigrationTarget', 'annotate <domain>for tp</domain>', 'write']);
    expect(f.writes[0].status?.migrationState).toEqual({
      migrationUid: 'm1',
      sourceNode: 'n1',
      targetNode: 'n2',
      targetPod: 'tp',
      targetNodeAddress: 'qemu+tcp://n2/system',
    });
    // The incoming (paused) domain: detected, not ready.
    f.setDomain(dom('paused', 'migration'));
    const advertised = vmi({ targetNodeAddress: 'qemu+tcp://n2/system' });
    expect(await f.sync.syncTarget(advertised)).toBe(1_000);
    expect(f.writes[1].status?.migrationState).toMatchObject({ targetNodeDomainDetected: true });
    expect(f.writes[1].status?.migrationState?.targetNodeDomainReadyTimestamp).toBeUndefined();
    // Running: ready.
    f.setDomain(dom('running'));
    expect(await f.sync.syncTarget(vmi({ targetNodeAddress: 'qemu+tcp://n2/system' }))).toBeUndefined();
    expect(f.writes[2].status?.migrationState).toMatchObject({
      targetNodeDomainDetected: true,
      targetNodeDomainReadyTimestamp: '2026-11-29T18:00:00Z',
    });
    expect(f.events.filter((e) => e === 'syncMigrationTarget')).toHaveLength(1);
  });

  it('sets the target pod up (network phase 1) before preparing its launcher; retries while that fails', async () => {
    let err: string | undefined = 'launcher pod set-up: no compute process yet';
    const f = fixture({ podSetup: () => err });
    expect(await f.sync.syncTarget(vmi())).toBe(2_000);
    expect(f.events).toEqual(['setup tp-uid']);
    err = undefined;
    expect(await f.sync.syncTarget(vmi())).toBe(1_000);
    expect(f.events).toEqual([
      'setup tp-uid',
      'setup tp-uid',
      'syncMigrationTarget',
      'annotate <domain>for tp</domain>',
      'write',
    ]);
  });

  it('a launcher that cannot be a target (UNIMPLEMENTED) fails the migration, naming the node', async () => {
    const f = fixture({
      prepareError: new LauncherCommandError(
        'SyncMigrationTarget',
        'VirtualMachineInstance ns/v: live migration is not available: the fake driver cannot migrate',
        12,
      ),
    });
    expect(await f.sync.syncTarget(vmi())).toBeUndefined();
    expect(f.writes[0].status?.migrationState).toMatchObject({
      completed: true,
      failed: true,
      failureReason:
        'target node n2: SyncMigrationTarget: VirtualMachineInstance ns/v: live migration is not available: the fake driver cannot migrate',
      endTimestamp: '2026-11-29T18:00:00Z',
    });
    expect(f.writes[0].status?.migrationState?.targetNodeAddress).toBeUndefined();
  });

  it('a transient launcher error is retried (thrown to the work queue), nothing written', async () => {
    const f = fixture({
      prepareError: new LauncherCommandError('SyncMigrationTarget', 'deadline exceeded', 4),
    });
    await expect(f.sync.syncTarget(vmi())).rejects.toThrow('SyncMigrationTarget: deadline exceeded');
    expect(f.writes).toEqual([]);
  });

  it('after a failed migration the target launcher is told to go, once', async () => {
    const f = fixture();
    const failed = vmi({ completed: true, failed: true, failureReason: 'x' });
    expect(await f.sync.syncTarget(failed)).toBeUndefined();
    expect(await f.sync.syncTarget(failed)).toBeUndefined();
    expect(f.events).toEqual(['deleteVirtualMachine', 'drop tp-uid']);
    expect(f.writes).toEqual([]);
  });
});
