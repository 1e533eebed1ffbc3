import { afterEach, describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../../src/api/config/cluster-config';
import type { VirtualMachine } from '../../../../src/api/generated/types';
import { EmbeddedStore } from '../../../../src/controllers/runtime/embedded/store';
import { VirtualMachineType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import {
  VirtController,
  type WriteRecord,
} from '../../../../src/controllers/virt-controller/virt-controller';
import { NodeSimulator } from '../../../support/node-simulator';
import { waitFor } from '../services/embedded-harness';

const vm = (name: string): VirtualMachine => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachine',
  metadata: { name, namespace: 'default' },
  spec: {
    runStrategy: 'Always',
    template: { spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } } },
  },
});

describe('two virt-controller replicas with leader election (embedded store)', () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const c of cleanup.reverse()) await c();
    cleanup.length = 0;
  });

  it('only the leader reconciles; the other takes over when it stops', async () => {
    const store = await EmbeddedStore.open();
    cleanup.push(() => store.close());
    const sim = new NodeSimulator(store);
    await sim.start();
    cleanup.push(() => sim.stop());
    const make = (identity: string, writes: WriteRecord[]) =>
      new VirtController({
        client: store,
        config: createClusterConfig({}, { hostArchitecture: 'amd64' }),
        launcher: { launcherImage: 'kubevirt-ts/launcher:test' },
        leaderElection: {
          name: 'virt-controller',
          namespace: 'default',
          identity,
          leaseDurationMs: 1500,
          renewDeadlineMs: 1000,
          retryPeriodMs: 100,
        },
        onWrite: (w) => writes.push(w),
        onError: (c, k, e) => console.log('ERR', identity, c, k, e.message),
      });
    const aWrites: WriteRecord[] = [];
    const bWrites: WriteRecord[] = [];
    const a = make('a', aWrites);
    await a.start(); // the Lease is free: a leads
    const b = make('b', bWrites);
    const bStarted = b.start(); // waits for the Lease
    cleanup.push(() => b.stop());
    expect(a.manager.isLeader()).toBe(true);
    expect(b.manager.isLeader()).toBe(false);

    await store.create(VirtualMachineType, vm('first') as KubeObject);
    await waitFor(
      'first Running',
      async () =>
        (await store.get<VirtualMachine & KubeObject>(VirtualMachineType, 'first', 'default')).status
          ?.printableStatus === 'Running',
    );
    expect(aWrites.length).toBeGreaterThan(0);
    expect(bWrites).toHaveLength(0);

    await a.stop(); // releases the Lease
    await bStarted;
    expect(b.manager.isLeader()).toBe(true);
    await store.create(VirtualMachineType, vm('second') as KubeObject);
    await waitFor(
      'second Running',
      async () =>
        (await store.get<VirtualMachine & KubeObject>(VirtualMachineType, 'second', 'default')).status
          ?.printableStatus === 'Running',
    );
    expect(bWrites.some((w) => w.kind === 'VirtualMachineInstance' && w.verb === 'create')).toBe(true);
  });
});
