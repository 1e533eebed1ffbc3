import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../../src/controllers/common/pod';
import {
  creatingStatus,
  runningStatus,
  terminatedStatus,
} from '../../../../src/controllers/local/pod-runtime/pod-status';

const pod: Pod = {
  metadata: { name: 'virt-launcher-v-x', namespace: 'default', uid: 'u' },
  spec: { containers: [{ name: 'compute', image: 'kubevirt-ts/virt-launcher:local' }] },
};
const types = (s: { conditions?: Array<{ type: string; status: string }> } | undefined) =>
  (s?.conditions ?? []).map((c) => `${c.type}=${c.status}`);

describe('pod statuses in kubelet shape', () => {
  it('a pod waiting for its volumes is Pending, its container ContainerCreating', () => {
    const s = creatingStatus(pod);
    expect(s.phase).toBe('Pending');
    expect(types(s)).toEqual([
      'PodScheduled=True',
      'Initialized=True',
      'ContainersReady=False',
      'Ready=False',
    ]);
    expect(s.containerStatuses?.[0]).toMatchObject({
      name: 'compute',
      ready: false,
      state: { waiting: { reason: 'ContainerCreating' } },
    });
  });

  it('a running pod is Ready with the process start time', () => {
    const s = runningStatus(pod, { pid: 7, startTicks: '1', startedAt: '2026-11-29T10:00:00Z' });
    expect(s.phase).toBe('Running');
    expect(s.startTime).toBe('2026-11-29T10:00:00Z');
    expect(types(s)).toContain('Ready=True');
    expect(s.containerStatuses?.[0]).toMatchObject({
      ready: true,
      state: { running: { startedAt: '2026-11-29T10:00:00Z' } },
    });
  });

  it('a finished pod: Succeeded on 0, Failed with the log tail otherwise, unknown when its end was missed', () => {
    expect(terminatedStatus(pod, 0, 'T', 'Import Complete')).toMatchObject({
      phase: 'Succeeded',
      containerStatuses: [{ state: { terminated: { exitCode: 0, reason: 'Completed', startedAt: 'T' } } }],
    });
    // A successful container's termination message is kept (the runtime passes it; a log tail only on failure).
    expect(
      terminatedStatus(pod, 0, 'T', 'Import Complete').containerStatuses?.[0]?.state?.terminated?.message,
    ).toBe('Import Complete');
    expect(terminatedStatus(pod, 0, 'T').containerStatuses?.[0]?.state?.terminated?.message).toBeUndefined();
    expect(terminatedStatus(pod, 1, 'T', 'error: no domain')).toMatchObject({
      phase: 'Failed',
      containerStatuses: [
        { state: { terminated: { exitCode: 1, reason: 'Error', message: 'error: no domain' } } },
      ],
    });
    expect(terminatedStatus(pod, undefined, 'T')).toMatchObject({
      phase: 'Failed',
      containerStatuses: [{ state: { terminated: { exitCode: 137, reason: 'ContainerStatusUnknown' } } }],
    });
  });
});
