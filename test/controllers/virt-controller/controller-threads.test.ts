/**
 * virt-controller's worker counts: upstream's per-controller defaults
 * (pkg/virt-controller/watch/application.go), its `--<group>-controller-threads` flags,
 * and the one-count `workers` override tests and benches use.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { checkControllerFlags } from '../../../src/cli/commands/virt-controller';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { checkThreads, workersFor } from '../../../src/controllers/virt-controller/controller-threads';
import { VirtController } from '../../../src/controllers/virt-controller/virt-controller';

const stores: EmbeddedStore[] = [];
afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
});

/** The workers each registered controller got, by name. */
async function workersOf(opts: { workers?: number; threads?: Record<string, number> }) {
  const store = await EmbeddedStore.open();
  stores.push(store);
  const ctrl = new VirtController({
    client: store,
    config: createClusterConfig({}, { hostArchitecture: 'amd64' }),
    launcher: { launcherImage: 'kubevirt-ts/launcher:test' },
    pools: true,
    evacuation: true,
    nodeHeartbeatTimeoutMs: 300_000,
    ...opts,
  });
  return Object.fromEntries(ctrl.manager.controllerList.map((c) => [c.name, c.options.workers]));
}

describe('virt-controller worker counts', () => {
  it("registers each controller with upstream's default", async () => {
    expect(await workersOf({})).toEqual({
      vmi: 10,
      vm: 3,
      replicaset: 3,
      migration: 3,
      pool: 3,
      node: 3,
      evacuation: 3,
      // Upstream's runs 1 worker over one key (the KubeVirt object); this one keys per VMI.
      'workload-updater': 3,
      // Upstream's workload updater proper: one worker over the KubeVirt object.
      'workload-updater-outdated': 1,
    });
    expect(workersFor('vmsnapshot')).toBe(6);
    expect(workersFor('vmsnapshotcontent')).toBe(6);
    expect(workersFor('vmrestore')).toBe(3);
    expect(workersFor('vmclone')).toBe(3);
    expect(workersFor('vmexport')).toBe(3);
  });

  it("a group's count wins over the one-count override, which wins over the defaults", async () => {
    expect(await workersOf({ threads: { vm: 7, vmi: 12 } })).toMatchObject({ vm: 7, vmi: 12, replicaset: 3 });
    expect(await workersOf({ workers: 4 })).toMatchObject({ vm: 4, vmi: 4, node: 4 });
    expect(await workersOf({ workers: 4, threads: { vm: 2 } })).toMatchObject({ vm: 2, vmi: 4 });
    expect(workersFor('vmsnapshotcontent', { threads: { snapshot: 9 } })).toBe(9);
  });

  it('checks the flags, naming the one that is wrong', () => {
    expect(checkThreads({ vmi: '20', rs: '1' })).toEqual({ vmi: 20, rs: 1 });
    expect(checkThreads({})).toEqual({});
    expect(() => checkThreads({ vm: '0' })).toThrow(
      '--vm-controller-threads: "0" is not a number from 1 to 64',
    );
    expect(() => checkThreads({ snapshot: '65' })).toThrow('--snapshot-controller-threads');
    expect(() => checkThreads({ migration: '3x' })).toThrow('--migration-controller-threads');
  });

  it('the CLI flags reach the options (camel-cased as commander gives them)', () => {
    const base = {
      launcherImage: 'kubevirt-ts/virt-launcher:dev',
      hypervisor: 'libvirt',
      podRuntime: 'kubelet',
      kubevirtNamespace: 'kubevirt',
      leaderElect: true,
      leaderElectLeaseDuration: '15',
      leaderElectRenewDeadline: '10',
      leaderElectRetryPeriod: '2',
      port: '8182',
      listenAddress: '0.0.0.0',
      nodeHeartbeatTimeout: '300',
      v: '2',
    };
    const plain = checkControllerFlags(base);
    expect(plain.workers).toBeUndefined();
    expect(plain.threads).toEqual({});
    const set = checkControllerFlags({
      ...base,
      vmControllerThreads: '5',
      rsControllerThreads: '2',
    } as typeof base);
    expect(set.threads).toEqual({ vm: 5, rs: 2 });
    expect(() => checkControllerFlags({ ...base, vmiControllerThreads: '-1' } as typeof base)).toThrow(
      '--vmi-controller-threads',
    );
    expect(() => checkControllerFlags({ ...base, workers: '0' })).toThrow('--workers');
  });
});
