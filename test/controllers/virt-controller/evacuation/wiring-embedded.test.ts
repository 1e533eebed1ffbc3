/**
 * The evacuation controller wired into virt-controller on the embedded store: a VMI marked
 * for evacuation while another of its launcher pods is still active (a migration source
 * pod not yet completed, on another node) gets its migration once that pod completes;
 * the pod's change must bring the VMI's node back to the controller, not only the pod's.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type {
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from '../../../../src/api/generated/types';
import type { Pod } from '../../../../src/controllers/common/pod';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import {
  NodeType,
  PodType,
  VirtualMachineInstanceMigrationType,
} from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { type Harness, startHarness, waitFor } from '../services/embedded-harness';

describe('evacuation in virt-controller (embedded)', () => {
  let h: Harness;
  afterEach(async () => {
    await h.stop();
  });

  it('migrates a marked VMI once its other active pod (on another node) completes', async () => {
    h = await startHarness({ sim: { nodeNames: ['node01', 'node02'] }, evacuation: true });
    for (const n of ['node01', 'node02'])
      await h.store.create(NodeType, { apiVersion: 'v1', kind: 'Node', metadata: { name: n } } as KubeObject);
    await h.store.create(VmiResource, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: 'v', namespace: 'default' },
      spec: {
        evictionStrategy: 'LiveMigrate',
        domain: { devices: {}, resources: { requests: { memory: '64Mi' } } },
      },
    } as KubeObject);
    const vmi = await waitFor('v Running on node01', async () => {
      const v = await h.store.get<VirtualMachineInstance & KubeObject>(VmiResource, 'v', 'default');
      return v.status?.phase === 'Running' && v.status.nodeName === 'node01' ? v : undefined;
    });
    // A leftover source pod of the VMI on node02, still running.
    const [own] = (await h.store.list<Pod & KubeObject>(PodType, { namespace: 'default' })).items;
    const leftover = await h.store.create(PodType, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'virt-launcher-v-old',
        namespace: 'default',
        labels: { ...own.metadata?.labels },
        annotations: { ...own.metadata?.annotations },
        ownerReferences: own.metadata?.ownerReferences,
      },
      spec: { ...own.spec, nodeName: 'node02' },
    } as KubeObject);
    const setPhase = (phase: string) =>
      waitFor(`the leftover pod ${phase}`, async () => {
        const cur = await h.store.get<Pod & KubeObject>(PodType, 'virt-launcher-v-old', 'default');
        await h.store.updateStatus(PodType, { ...cur, status: { ...cur.status, phase } } as KubeObject);
        return true;
      });
    expect(leftover.metadata?.name).toBe('virt-launcher-v-old');
    await setPhase('Running');
    // Marked for evacuation from node01 (virt-api's webhook), live-migratable.
    await waitFor('the VMI marked', async () => {
      const fresh = await h.store.get<VirtualMachineInstance & KubeObject>(VmiResource, 'v', 'default');
      await h.store.update(VmiResource, {
        ...fresh,
        status: {
          ...fresh.status,
          evacuationNodeName: 'node01',
          conditions: [...(fresh.status?.conditions ?? []), { type: 'LiveMigratable', status: 'True' }],
        },
      } as KubeObject);
      return true;
    });
    const migrations = async () =>
      (
        await h.store.list<VirtualMachineInstanceMigration & KubeObject>(
          VirtualMachineInstanceMigrationType,
          {
            namespace: 'default',
          },
        )
      ).items;
    await new Promise((r) => setTimeout(r, 300));
    expect(await migrations()).toEqual([]);

    await setPhase('Succeeded');
    const [m] = await waitFor('the evacuation migration', async () => {
      const l = await migrations();
      return l.length ? l : undefined;
    });
    expect(m.spec).toEqual({ vmiName: 'v', priority: 'system-critical' });
    expect(m.metadata?.annotations?.['kubevirt.io/evacuationMigration']).toBe('node01');
    expect(vmi.metadata?.uid).toBeDefined();
  });
});
