import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type {
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from '../../../../src/api/generated/types';
import type { Pod } from '../../../../src/controllers/common/pod';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import {
  EventType,
  PodType,
  VirtualMachineInstanceMigrationType,
} from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { type Harness, startHarness, waitFor } from '../services/embedded-harness';

const vmi = (name: string): VirtualMachineInstance => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineInstance',
  metadata: { name, namespace: 'default', finalizers: ['kubevirt.io/foregroundDeleteVirtualMachine'] },
  spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } },
});
const migration = (name: string, vmiName: string): VirtualMachineInstanceMigration => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineInstanceMigration',
  metadata: { name, namespace: 'default' },
  spec: { vmiName },
});

describe('migration controller on the embedded store', () => {
  let h: Harness;
  afterEach(async () => {
    await h.stop();
  });

  const getM = (name: string) =>
    h.store.get<VirtualMachineInstanceMigration & KubeObject>(
      VirtualMachineInstanceMigrationType,
      name,
      'default',
    );
  const getVmi = (name: string) =>
    h.store.get<VirtualMachineInstance & KubeObject>(VmiResource, name, 'default');

  describe('with two nodes', () => {
    beforeEach(async () => {
      h = await startHarness({ sim: { nodeNames: ['node01', 'node02'] } });
    });

    it('moves a running VMI to another node through every phase', async () => {
      await h.store.create(VmiResource, vmi('mig1') as KubeObject);
      await waitFor('VMI Running', async () => (await getVmi('mig1')).status?.phase === 'Running');
      expect((await getVmi('mig1')).status!.nodeName).toBe('node01');

      await h.store.create(VirtualMachineInstanceMigrationType, migration('job1', 'mig1') as KubeObject);
      const m = await waitFor('migration Succeeded', async () => {
        const x = await getM('job1');
        return x.status?.phase === 'Succeeded' ? x : undefined;
      });
      expect(m.status!.phaseTransitionTimestamps!.map((t) => t.phase)).toEqual([
        'Pending',
        'Scheduling',
        'Scheduled',
        'PreparingTarget',
        'TargetReady',
        'Running',
        'Succeeded',
      ]);
      const moved = await getVmi('mig1');
      expect(moved.status!.nodeName).toBe('node02');
      expect(moved.status!.phase).toBe('Running');
      expect(moved.status!.migrationState).toMatchObject({
        migrationUid: m.metadata!.uid,
        sourceNode: 'node01',
        targetNode: 'node02',
        completed: true,
      });

      const pods = (await h.store.list<Pod & KubeObject>(PodType, { namespace: 'default' })).items;
      const target = pods.find((p) => p.metadata!.labels!['kubevirt.io/migrationJobUID'] === m.metadata!.uid);
      expect(target!.spec!.nodeName).toBe('node02');
      // Both launcher pods named, as upstream's: the source is the VMI's pod on node01.
      const source = pods.find((p) => p.spec!.nodeName === 'node01');
      expect(source).toBeDefined();
      expect(moved.status!.migrationState).toMatchObject({
        sourcePod: source!.metadata!.name,
        targetPod: target!.metadata!.name,
      });
      expect(target!.spec!.affinity).toMatchObject({
        podAntiAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'kubernetes.io/hostname' }],
        },
      });
      // The migration object loses its finalizer once final and keeps the VMI's final state (upstream's).
      const final = await waitFor('finalizer removed', async () => {
        const x = await getM('job1');
        return x.metadata!.finalizers?.length ? undefined : x;
      });
      expect(final.status!.migrationState).toMatchObject({
        migrationUid: m.metadata!.uid,
        sourceNode: 'node01',
        targetNode: 'node02',
        sourcePod: source!.metadata!.name,
        completed: true,
      });
      const events = (
        await h.store.list<KubeObject & { reason: string }>(EventType, { namespace: 'default' })
      ).items.map((e) => e.reason);
      expect(events).toEqual(
        expect.arrayContaining(['SuccessfulCreate', 'SuccessfulHandOver', 'SuccessfulMigration']),
      );
    });

    it('fails a migration of a VMI that does not exist', async () => {
      await h.store.create(VirtualMachineInstanceMigrationType, migration('job2', 'ghost') as KubeObject);
      const m = await waitFor('Failed', async () => {
        const x = await getM('job2');
        return x.status?.phase === 'Failed' ? x : undefined;
      });
      expect(m.status!.conditions).toContainEqual(
        expect.objectContaining({ type: 'Failed', message: 'VirtualMachineInstance ghost does not exist' }),
      );
    });
  });

  describe('when the target cannot be scheduled', () => {
    beforeEach(async () => {
      h = await startHarness({
        sim: {
          unschedulable: (p) =>
            p.metadata?.labels?.['kubevirt.io/migrationJobUID']
              ? "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules."
              : undefined,
        },
      });
    });

    it('stays Scheduling and leaves the VMI running where it is', async () => {
      await h.store.create(VmiResource, vmi('mig3') as KubeObject);
      await waitFor('VMI Running', async () => (await getVmi('mig3')).status?.phase === 'Running');
      await h.store.create(VirtualMachineInstanceMigrationType, migration('job3', 'mig3') as KubeObject);
      await waitFor('Scheduling', async () => (await getM('job3')).status?.phase === 'Scheduling');
      const pods = await waitFor('target pod unschedulable', async () => {
        const ps = (await h.store.list<Pod & KubeObject>(PodType, { namespace: 'default' })).items;
        const t = ps.find((p) => p.metadata!.labels!['kubevirt.io/migrationJobUID']);
        return t?.status?.conditions?.some((c) => c.reason === 'Unschedulable') ? ps : undefined;
      });
      expect(pods).toHaveLength(2);
      const v = await getVmi('mig3');
      expect(v.status!.phase).toBe('Running');
      expect(v.status!.nodeName).toBe('node01');
      expect(v.status!.migrationState).toBeUndefined();
      expect((await getM('job3')).status!.phase).toBe('Scheduling');
    });
    it("fails after upstream's unschedulable timeout (annotation: 1 s), deleting the target pod", async () => {
      await h.store.create(VmiResource, vmi('mig4') as KubeObject);
      await waitFor('VMI Running', async () => (await getVmi('mig4')).status?.phase === 'Running');
      const m0 = migration('job4', 'mig4');
      m0.metadata!.annotations = { 'kubevirt.io/migrationUnschedulablePodTimeoutSeconds': '1' };
      await h.store.create(VirtualMachineInstanceMigrationType, m0 as KubeObject);
      const m = await waitFor('Failed', async () => {
        const x = await getM('job4');
        return x.status?.phase === 'Failed' ? x : undefined;
      });
      const reason = m.status!.conditions!.find((c) => c.type === 'Failed')!.message!;
      expect(reason).toMatch(/^unschedulable pod default\/virt-launcher-mig4-\w+ timeout period exceeded$/);
      expect(m.status!.phaseTransitionTimestamps!.map((t) => t.phase)).toEqual([
        'Pending',
        'Scheduling',
        'Failed',
      ]);
      await waitFor('target pod gone', async () => {
        const ps = (await h.store.list<Pod & KubeObject>(PodType, { namespace: 'default' })).items;
        return !ps.some((p) => p.metadata!.labels!['kubevirt.io/migrationJobUID']);
      });
      const v = await getVmi('mig4');
      expect(v.status!.phase).toBe('Running');
      expect(v.status!.nodeName).toBe('node01');
      const events = (
        await h.store.list<KubeObject & { reason: string }>(EventType, { namespace: 'default' })
      ).items.map((e) => e.reason);
      expect(events).toEqual(expect.arrayContaining(['migrationTargetPodUnschedulable', 'SuccessfulDelete']));
    });
  });

  describe('when the target launcher dies while it is prepared', () => {
    let failing = true;
    beforeEach(async () => {
      failing = true;
      h = await startHarness({ sim: { nodeNames: ['node01', 'node02'], failTarget: () => failing } });
    });

    // The drain case's flake: the migration went Failed ("target pod failed") but the VMI
    // kept its unfinished migration state, so the evacuation's retry stayed Pending forever.
    it("marks the failure in the VMI's migration state, so the next migration runs", async () => {
      await h.store.create(VmiResource, vmi('mig5') as KubeObject);
      await waitFor('VMI Running', async () => (await getVmi('mig5')).status?.phase === 'Running');
      await h.store.create(VirtualMachineInstanceMigrationType, migration('job5', 'mig5') as KubeObject);
      const m = await waitFor('Failed', async () => {
        const x = await getM('job5');
        return x.status?.phase === 'Failed' ? x : undefined;
      });
      expect(m.status!.conditions!.find((c) => c.type === 'Failed')!.message).toBe('target pod failed');
      const v = await waitFor('failure marked on the VMI', async () => {
        const x = await getVmi('mig5');
        return x.status?.migrationState?.failed ? x : undefined;
      });
      expect(v.status!.migrationState).toMatchObject({
        migrationUid: m.metadata!.uid,
        completed: true,
        failed: true,
        failureReason: 'Target pod is down',
      });
      expect(v.status!.migrationState!.endTimestamp).toBeDefined();
      expect(v.status!.phase).toBe('Running');
      expect(v.status!.nodeName).toBe('node01');
      // The final migration keeps that state (upstream's).
      await waitFor(
        'state kept on the migration',
        async () => (await getM('job5')).status?.migrationState?.failed,
      );

      failing = false;
      await h.store.create(VirtualMachineInstanceMigrationType, migration('job6', 'mig5') as KubeObject);
      await waitFor(
        'the next migration Succeeded',
        async () => (await getM('job6')).status?.phase === 'Succeeded',
      );
      expect((await getVmi('mig5')).status!.nodeName).toBe('node02');
    });
  });
});
