/**
 * The migration controller on the embedded store with the KubeVirt CR's migration limits
 * and a MigrationPolicy: with parallelOutboundMigrationsPerNode 1, two migrations from one
 * node run one after the other (the second target pod is created only after the first
 * migration Succeeded, by the store's one resourceVersion counter), the waiting one says
 * why in an Event; the policy matched by the VMI's labels is the migration's
 * configuration on the VMI and kept on the final migration.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type {
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from '../../../../src/api/generated/types';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import { SharedInformerFactory } from '../../../../src/controllers/runtime/informer';
import {
  EventType,
  MigrationPolicyType,
  PodType,
  VirtualMachineInstanceMigrationType,
} from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { type Harness, startHarness, waitFor } from '../services/embedded-harness';

const vmi = (name: string, labels: Record<string, string> = {}): VirtualMachineInstance => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineInstance',
  metadata: { name, namespace: 'default', labels },
  spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } },
});
const migration = (name: string, vmiName: string): VirtualMachineInstanceMigration => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineInstanceMigration',
  metadata: { name, namespace: 'default' },
  spec: { vmiName },
});

describe('migration limits and policies on the embedded store', () => {
  let h: Harness;
  let watch: SharedInformerFactory | undefined;
  afterEach(async () => {
    await watch?.shutdown();
    await h.stop();
  });

  it('two migrations from one node with parallelOutboundMigrationsPerNode 1 run one after the other; the policy shows in the configuration', async () => {
    h = await startHarness({
      sim: { nodeNames: ['node01', 'node02'] },
      types: [MigrationPolicyType],
      migrationPolicies: true,
      configuration: { migrations: { parallelOutboundMigrationsPerNode: 1 } },
    });
    await h.store.create(MigrationPolicyType, {
      apiVersion: 'migrations.kubevirt.io/v1alpha1',
      kind: 'MigrationPolicy',
      metadata: { name: 'slow-gold' },
      spec: {
        selectors: { virtualMachineInstanceSelector: { tier: 'gold' } },
        bandwidthPerMigration: '64Mi',
        completionTimeoutPerGiB: 10,
      },
    } as KubeObject);
    await h.store.create(VmiResource, vmi('va', { tier: 'gold' }) as KubeObject);
    await h.store.create(VmiResource, vmi('vb') as KubeObject);
    for (const n of ['va', 'vb'])
      await waitFor(`${n} Running on node01`, async () => {
        const v = await h.store.get<VirtualMachineInstance & KubeObject>(VmiResource, n, 'default');
        return v.status?.phase === 'Running' && v.status.nodeName === 'node01';
      });

    // The store's resourceVersion at each target pod's creation and each migration's success.
    const seen: { what: string; rv: number }[] = [];
    watch = new SharedInformerFactory(h.store);
    watch.informerFor(PodType).addEventHandler({
      onAdd: (p) => {
        const job = p.metadata?.labels?.['kubevirt.io/migrationJobUID'];
        if (job) seen.push({ what: `pod ${job}`, rv: Number(p.metadata?.resourceVersion) });
      },
    });
    watch.informerFor(VirtualMachineInstanceMigrationType).addEventHandler({
      onUpdate: (a, b) => {
        const was = (a as VirtualMachineInstanceMigration).status?.phase;
        const is = (b as VirtualMachineInstanceMigration).status?.phase;
        if (is === 'Succeeded' && was !== is)
          seen.push({ what: `done ${b.metadata?.uid}`, rv: Number(b.metadata?.resourceVersion) });
      },
    });
    watch.start();
    await watch.waitForCacheSync();

    const ma = await h.store.create(VirtualMachineInstanceMigrationType, migration('ma', 'va') as KubeObject);
    const mb = await h.store.create(VirtualMachineInstanceMigrationType, migration('mb', 'vb') as KubeObject);
    const done = async (name: string) =>
      waitFor(
        `${name} Succeeded`,
        async () => {
          const m = await h.store.get<VirtualMachineInstanceMigration & KubeObject>(
            VirtualMachineInstanceMigrationType,
            name,
            'default',
          );
          return m.status?.phase === 'Succeeded' && m.status.migrationState?.completed ? m : undefined;
        },
        20_000,
      );
    const [a, b] = [await done('ma'), await done('mb')];
    await waitFor('both successes seen', () => seen.filter((s) => s.what.startsWith('done')).length === 2);
    const rv = (what: string) => seen.find((s) => s.what === what)?.rv ?? Number.NaN;
    const ids = [ma.metadata?.uid, mb.metadata?.uid];
    // Whichever went first, the other's target pod came after its success.
    const [first, second] = rv(`pod ${ids[0]}`) < rv(`pod ${ids[1]}`) ? ids : [ids[1], ids[0]];
    expect(rv(`pod ${second}`)).toBeGreaterThan(rv(`done ${first}`));
    const waited = (
      await h.store.list<
        KubeObject & { reason?: string; message?: string; involvedObject?: { uid?: string } }
      >(EventType, { namespace: 'default' })
    ).items.filter((e) => e.reason === 'WaitingForMigrationSlot');
    expect(waited.map((e) => e.involvedObject?.uid)).toEqual([second]);
    expect(waited[0].message).toMatch(
      /outbound migrations on source node node01 \[1\] has hit outbound migrations per node limit|ahead of it take the 1 free slot\(s\) of the per-node limit/,
    );

    // The policy: va's migration has its bandwidth and timeout; vb's the cluster's.
    expect(a.status?.migrationState?.migrationPolicyName).toBe('slow-gold');
    expect(a.status?.migrationState?.migrationConfiguration).toMatchObject({
      bandwidthPerMigration: '64Mi',
      completionTimeoutPerGiB: 10,
      progressTimeout: 150,
      parallelOutboundMigrationsPerNode: 1,
    });
    expect(b.status?.migrationState?.migrationPolicyName).toBeUndefined();
    expect(b.status?.migrationState?.migrationConfiguration).toMatchObject({
      bandwidthPerMigration: '0Mi',
      completionTimeoutPerGiB: 150,
    });
    expect(h.errors).toEqual([]);
  }, 30_000);
});
