/**
 * The launcher pod's readiness gate on the embedded store: a kubelet sets no
 * `kubevirt.io/virtual-machine-unpaused` condition itself (its pod stays Ready=False,
 * ReadinessGatesNotReady), so the VMI controller patches it into the pod's status, True
 * while the VMI is not paused and False once it is (upstream's syncPausedConditionToPod).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import type { Pod } from '../../../../src/controllers/common/pod';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import { PodType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { unpausedConditionPatch } from '../../../../src/controllers/virt-controller/vmi/unpaused-condition';
import { type Harness, startHarness, waitFor } from '../services/embedded-harness';

const GATE = 'kubevirt.io/virtual-machine-unpaused';
const vmi = {
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineInstance',
  metadata: { name: 'gated', namespace: 'default' },
  spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } },
} as VirtualMachineInstance;

type PodObject = Pod & KubeObject;
const gateOf = (p: PodObject) => p.status?.conditions?.find((c) => c.type === GATE);

describe('the launcher pod readiness gate (embedded store)', () => {
  let h: Harness;
  beforeEach(async () => {
    // The simulator leaves the pod alone: the test plays a kubelet, which sets no gate.
    h = await startHarness({ sim: { hold: () => true } });
  });
  afterEach(async () => {
    await h.stop();
  });

  it("sets the unpaused condition True on a running VMI's pod, False when the VMI is paused", async () => {
    await h.store.create(VmiResource, vmi as KubeObject);
    const created = await waitFor('launcher pod', async () => {
      return (await h.store.list<PodObject>(PodType, { namespace: 'default' })).items[0];
    });
    expect(created.spec?.readinessGates).toEqual([{ conditionType: GATE }]);
    const now = new Date().toISOString();
    const bound = await h.store.update<PodObject>(PodType, {
      ...created,
      spec: { ...created.spec!, nodeName: 'node-a' },
    });
    await h.store.updateStatus(PodType, {
      ...bound,
      status: {
        phase: 'Running',
        conditions: [
          { type: 'PodScheduled', status: 'True', lastTransitionTime: now },
          { type: 'ContainersReady', status: 'True', lastTransitionTime: now },
          {
            type: 'Ready',
            status: 'False',
            reason: 'ReadinessGatesNotReady',
            message: `corresponding condition of pod readiness gate "${GATE}" does not exist.`,
            lastTransitionTime: now,
          },
        ],
        containerStatuses: bound.spec!.containers.map((c) => ({
          name: c.name,
          ready: true,
          restartCount: 0,
          state: { running: { startedAt: now } },
        })),
      },
    } as PodObject);
    const name = created.metadata?.name ?? '';
    // The node agent reports the guest running (the condition is synced for a running VMI only).
    await waitFor('the VMI updated to Running', async () => {
      const v = await h.store.get<VirtualMachineInstance & KubeObject>(VmiResource, 'gated', 'default');
      return h.store
        .update(VmiResource, {
          ...v,
          status: { ...v.status, phase: 'Running', nodeName: 'node-a' },
        } as KubeObject)
        .catch(() => undefined);
    });
    const unpaused = await waitFor('the gate condition True', async () => {
      const p = await h.store.get<PodObject>(PodType, name, 'default');
      return gateOf(p)?.status === 'True' ? p : undefined;
    });
    expect(gateOf(unpaused)).toMatchObject({ status: 'True', reason: 'NotPaused' });
    // The kubelet's own conditions stay as they were.
    expect(unpaused.status?.conditions?.map((c) => c.type)).toEqual([
      'PodScheduled',
      'ContainersReady',
      'Ready',
      GATE,
    ]);

    // The node agent reports the guest paused: the gate follows.
    await waitFor('the VMI updated with Paused', async () => {
      const v = await h.store.get<VirtualMachineInstance & KubeObject>(VmiResource, 'gated', 'default');
      const conditions = [
        ...(v.status?.conditions ?? []),
        { type: 'Paused', status: 'True', reason: 'PausedByUser' },
      ];
      // The controller writes the VMI too: retry on a conflict.
      return h.store
        .update(VmiResource, { ...v, status: { ...v.status, conditions } } as KubeObject)
        .catch(() => undefined);
    });
    const paused = await waitFor('the gate condition False', async () => {
      const p = await h.store.get<PodObject>(PodType, name, 'default');
      return gateOf(p)?.status === 'False' ? p : undefined;
    });
    expect(gateOf(paused)).toMatchObject({ status: 'False', reason: 'Paused' });
    expect(h.errors).toEqual([]);
  });

  it('patches nothing when the condition is already as the VMI wants it', () => {
    const pod = { status: { conditions: [{ type: GATE, status: 'True' }] } } as Pod;
    expect(unpausedConditionPatch(vmi, pod, 'now')).toBeUndefined();
    const ops = unpausedConditionPatch(
      { ...vmi, status: { conditions: [{ type: 'Paused', status: 'True' }] } },
      pod,
      'now',
    );
    expect(ops?.map((o) => o.op)).toEqual(['test', 'replace']);
    expect(ops?.[1].value).toEqual([
      {
        type: GATE,
        status: 'False',
        reason: 'Paused',
        message: 'the virtual machine is paused',
        lastProbeTime: 'now',
        lastTransitionTime: 'now',
      },
    ]);
  });
});
