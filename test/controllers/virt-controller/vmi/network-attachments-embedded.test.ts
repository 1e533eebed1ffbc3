/**
 * A VMI's multus networks on the embedded store: the launcher pod carries upstream's
 * `k8s.v1.cni.cncf.io/networks` annotation (hashed pod interface names), and a VMI naming
 * a NetworkAttachmentDefinition that does not exist gets no pod, a Synchronized=False
 * condition and a FailedCreate event naming it, until the definition is created.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import {
  EventType,
  NamespaceType,
  NetworkAttachmentDefinitionType,
  PodType,
} from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { type Harness, startHarness, waitFor } from '../services/embedded-harness';

const vmi = {
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineInstance',
  metadata: { name: 'multi', namespace: 'default' },
  spec: {
    domain: {
      devices: {
        interfaces: [
          { name: 'default', masquerade: {} },
          { name: 'blue', bridge: {}, macAddress: '02:11:22:33:44:55' },
          { name: 'red', bridge: {} },
        ],
      },
      resources: { requests: { memory: '64Mi' } },
    },
    networks: [
      { name: 'default', pod: {} },
      { name: 'blue', multus: { networkName: 'blue-net' } },
      { name: 'red', multus: { networkName: 'other/red-net' } },
    ],
  },
} as VirtualMachineInstance;

const nad = (namespace: string, name: string) =>
  ({
    apiVersion: 'k8s.cni.cncf.io/v1',
    kind: 'NetworkAttachmentDefinition',
    metadata: { name, namespace },
    spec: { config: JSON.stringify({ cniVersion: '1.0.0', name, type: 'bridge', bridge: 'br-x' }) },
  }) as KubeObject;

describe('multus networks of a VMI (embedded store)', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await startHarness({ networkAttachments: true, sim: { hold: () => true } });
  });
  afterEach(async () => {
    await h.stop();
  });

  it('waits for a missing NetworkAttachmentDefinition, then renders the networks annotation', async () => {
    await h.store.create(NetworkAttachmentDefinitionType, nad('default', 'blue-net'));
    await h.store.create(VmiResource, vmi as KubeObject);
    const synced = await waitFor('Synchronized=False', async () => {
      const v = await h.store.get<VirtualMachineInstance & KubeObject>(VmiResource, 'multi', 'default');
      return v.status?.conditions?.find((c) => c.type === 'Synchronized' && c.status === 'False');
    });
    const message =
      'failed to render launch manifest: failed to locate network attachment definition other/red-net';
    expect(synced).toMatchObject({ reason: 'FailedCreate', message });
    const events = (
      await h.store.list<KubeObject & { type: string; reason: string; message: string }>(EventType, {
        namespace: 'default',
      })
    ).items;
    expect(events).toContainEqual(
      expect.objectContaining({
        type: 'Warning',
        reason: 'FailedCreate',
        message: `Error creating pod: ${message}`,
      }),
    );
    expect((await h.store.list(PodType, { namespace: 'default' })).items).toHaveLength(0);
    const pending = await h.store.get<VirtualMachineInstance & KubeObject>(VmiResource, 'multi', 'default');
    expect(pending.status?.phase).toBe('Pending');

    // The definition appears: the pod follows, asking for both networks as upstream does.
    await h.store.create(NamespaceType, { metadata: { name: 'other' } } as KubeObject);
    await h.store.create(NetworkAttachmentDefinitionType, nad('other', 'red-net'));
    const pod = await waitFor('launcher pod', async () => {
      const pods = (await h.store.list<KubeObject>(PodType, { namespace: 'default' })).items;
      return pods[0];
    });
    expect(JSON.parse(pod.metadata?.annotations?.['k8s.v1.cni.cncf.io/networks'] ?? 'null')).toEqual([
      { name: 'blue-net', namespace: 'default', mac: '02:11:22:33:44:55', interface: 'pod16477688c0e' },
      { name: 'red-net', namespace: 'other', interface: 'podb1f51a511f1' },
    ]);
    expect(h.errors).toEqual([]);
  });
});
