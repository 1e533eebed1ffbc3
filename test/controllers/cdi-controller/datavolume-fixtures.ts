/**
 * Fixtures for the DataVolume tests on the embedded store: DataVolume bodies and the
 * helpers that read a DataVolume's phase and events and play the kubelet for its pods.
 */
import type { DataVolume } from '../../../src/api/generated/cdi/types';
import type { Pod } from '../../../src/controllers/common/pod';
import type { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { DataVolumeType, EventType, PodType } from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { waitFor } from '../../support/wait';

/** The namespace every fixture object is in. */
export const NS = 'default';

/** An import DataVolume from `source`, asking 1Gi unless `storage` says otherwise. */
export function dv(
  name: string,
  source: Record<string, unknown>,
  storage: Record<string, unknown> = {},
): DataVolume {
  return {
    apiVersion: 'cdi.kubevirt.io/v1beta1',
    kind: 'DataVolume',
    metadata: { name, namespace: NS },
    spec: { source, storage: { resources: { requests: { storage: '1Gi' } }, ...storage } },
  } as DataVolume;
}

/** An importer container's end as the kubelet reports it: the pod phase and the termination message. */
export const terminated = (
  phase: 'Succeeded' | 'Failed',
  message: string,
  exitCode: number,
): Pod['status'] => ({
  phase,
  containerStatuses: [{ name: 'importer', state: { terminated: { exitCode, message } } }],
});

/**
 * Helpers on the store `store()` returns when called (a test's beforeEach opens a new one):
 * read a DataVolume, wait for its phase, list its events, wait for a pod and set its status.
 */
export function dataVolumeHelpers(store: () => EmbeddedStore) {
  const getDv = (name: string) => store().get<DataVolume & KubeObject>(DataVolumeType, name, NS);
  const phase = (name: string, want: string) =>
    waitFor(`DataVolume ${name} ${want}`, async () => {
      const d = await getDv(name);
      return d.status?.phase === want ? d : undefined;
    });
  const pod = (name: string) =>
    waitFor(`pod ${name}`, async () =>
      store()
        .get<Pod & KubeObject>(PodType, name, NS)
        .catch(() => undefined),
    );
  const setPod = async (name: string, status: Pod['status']) => {
    const p = await store().get<Pod & KubeObject>(PodType, name, NS);
    await store().updateStatus(PodType, { ...p, status } as KubeObject);
  };
  const events = async (name: string) =>
    (await store().list(EventType, { namespace: NS })).items
      .filter((e) => (e as { involvedObject?: { name?: string } }).involvedObject?.name === name)
      .map((e) => `${(e as { reason?: string }).reason}: ${(e as { message?: string }).message}`);
  return { getDv, phase, pod, setPod, events };
}
