import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type {
  VirtualMachineInstance,
  VirtualMachineInstanceReplicaSet,
} from '../../../../src/api/generated/types';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import {
  EventType,
  VirtualMachineInstanceReplicaSetType,
} from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { type Harness, startHarness, waitFor } from '../services/embedded-harness';

function rs(name: string, replicas: number): VirtualMachineInstanceReplicaSet {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstanceReplicaSet',
    metadata: { name, namespace: 'default' },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } },
      },
    },
  };
}

describe('VirtualMachineInstanceReplicaSet controller on the embedded store', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await startHarness();
  });
  afterEach(async () => {
    await h.stop();
  });

  const vmisOf = async (app: string) =>
    (
      await h.store.list<VirtualMachineInstance & KubeObject>(VmiResource, {
        namespace: 'default',
        labelSelector: `app=${app}`,
      })
    ).items.filter((v) => !v.metadata?.deletionTimestamp);
  const getRs = (name: string) =>
    h.store.get<VirtualMachineInstanceReplicaSet & KubeObject>(
      VirtualMachineInstanceReplicaSetType,
      name,
      'default',
    );

  it('creates the replicas, owned by the ReplicaSet, and reports them ready', async () => {
    await h.store.create(VirtualMachineInstanceReplicaSetType, rs('web', 3) as KubeObject);
    const status = await waitFor('3 ready replicas', async () => {
      const r = await getRs('web');
      return r.status?.readyReplicas === 3 ? r.status : undefined;
    });
    expect(status).toMatchObject({ replicas: 3, readyReplicas: 3, labelSelector: 'app=web' });
    const vmis = await vmisOf('web');
    expect(vmis).toHaveLength(3);
    for (const v of vmis) {
      expect(v.metadata!.name).toMatch(/^web/);
      expect(v.metadata!.ownerReferences![0]).toMatchObject({
        kind: 'VirtualMachineInstanceReplicaSet',
        name: 'web',
        controller: true,
      });
      expect(v.status!.phase).toBe('Running');
    }
    const events = (
      await h.store.list<KubeObject & { reason: string; message: string }>(EventType, {
        namespace: 'default',
      })
    ).items;
    expect(
      events.filter(
        (e) =>
          e.reason === 'SuccessfulCreate' && e.message.startsWith('Created virtual machine instance: web'),
      ),
    ).toHaveLength(3);
  });

  it('scales up and down', async () => {
    await h.store.create(VirtualMachineInstanceReplicaSetType, rs('api', 2) as KubeObject);
    await waitFor('2 ready', async () => (await getRs('api')).status?.readyReplicas === 2);
    let cur = await getRs('api');
    await h.store.update(VirtualMachineInstanceReplicaSetType, {
      ...cur,
      spec: { ...cur.spec, replicas: 4 },
    } as KubeObject);
    await waitFor('4 ready', async () => (await getRs('api')).status?.readyReplicas === 4);
    expect(await vmisOf('api')).toHaveLength(4);
    cur = await getRs('api');
    await h.store.update(VirtualMachineInstanceReplicaSetType, {
      ...cur,
      spec: { ...cur.spec, replicas: 1 },
    } as KubeObject);
    await waitFor(
      '1 replica',
      async () => (await getRs('api')).status?.replicas === 1 && (await vmisOf('api')).length === 1,
    );
  });

  it('replaces a VMI that finished', async () => {
    await h.store.create(VirtualMachineInstanceReplicaSetType, rs('job', 1) as KubeObject);
    await waitFor('1 ready', async () => (await getRs('job')).status?.readyReplicas === 1);
    const [first] = await vmisOf('job');
    await h.store.update(VmiResource, {
      ...first,
      status: { ...first.status, phase: 'Failed' },
    } as KubeObject);
    const next = await waitFor('replacement running', async () => {
      const vs = (await vmisOf('job')).filter(
        (v) => v.metadata!.uid !== first.metadata!.uid && v.status?.phase === 'Running',
      );
      return vs.length === 1 ? vs[0] : undefined;
    });
    expect(next.metadata!.uid).not.toBe(first.metadata!.uid);
  });

  it('does not scale while paused, and says so', async () => {
    const r = rs('paused', 2);
    r.spec.paused = true;
    await h.store.create(VirtualMachineInstanceReplicaSetType, r as KubeObject);
    const st = await waitFor('paused condition', async () =>
      (await getRs('paused')).status?.conditions?.find((c) => c.type === 'ReplicaPaused'),
    );
    expect(st).toMatchObject({ status: 'True' });
    expect(await vmisOf('paused')).toHaveLength(0);
  });

  it('reports an invalid template as ReplicaFailure', async () => {
    const r = rs('bad', 1);
    r.spec.template.spec!.domain.devices.disks = [{ name: 'nosuchvolume', disk: {} }];
    await h.store.create(VirtualMachineInstanceReplicaSetType, r as KubeObject);
    const c = await waitFor('failure', async () =>
      (await getRs('bad')).status?.conditions?.find((x) => x.type === 'ReplicaFailure'),
    );
    expect(c!.message).toContain('spec.template.spec.domain.devices.disks[0]');
  });
});
