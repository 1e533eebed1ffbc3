/**
 * The Pod statuses the local pod runtime writes, in kubelet's shape: a bound pod whose
 * volumes are not ready yet (Pending, ContainerCreating), a running one, a finished one.
 */
import type { Pod } from '../../common/pod';
import type { ProcessRecord } from './processes';

type PodStatus = NonNullable<Pod['status']>;
type ContainerState = Record<string, unknown>;

/** RFC 3339 without fractional seconds, as kubelet writes timestamps. */
const stamp = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');

const condition = (type: string, status: 'True' | 'False', now: string, reason?: string) => ({
  type,
  status,
  ...(reason ? { reason } : {}),
  lastProbeTime: null,
  lastTransitionTime: now,
});

/** One status per container of the pod, all in `state`. */
const containers = (pod: Pod, state: ContainerState, running: boolean) =>
  (pod.spec?.containers ?? []).map((c) => ({
    name: c.name,
    image: c.image,
    imageID: '',
    ready: running,
    started: running,
    restartCount: 0,
    state,
  }));

/** A bound pod whose volumes are not set up yet. */
export function creatingStatus(pod: Pod): PodStatus {
  const now = stamp();
  return {
    phase: 'Pending',
    hostIP: '127.0.0.1',
    qosClass: 'Burstable',
    conditions: [
      condition('PodScheduled', 'True', now),
      condition('Initialized', 'True', now),
      condition('ContainersReady', 'False', now, 'ContainersNotReady'),
      condition('Ready', 'False', now, 'ContainersNotReady'),
    ],
    containerStatuses: containers(pod, { waiting: { reason: 'ContainerCreating' } }, false),
  } as PodStatus;
}

/** A pod whose process `rec` runs, with its pod IP when it has a network of its own. */
export function runningStatus(pod: Pod, rec: ProcessRecord, podIP?: string): PodStatus {
  const now = stamp();
  return {
    phase: 'Running',
    hostIP: '127.0.0.1',
    ...(podIP ? { podIP, podIPs: [{ ip: podIP }] } : {}),
    startTime: rec.startedAt,
    qosClass: 'Burstable',
    conditions: [
      'PodScheduled',
      'Initialized',
      'kubevirt.io/virtual-machine-unpaused',
      'ContainersReady',
      'Ready',
    ].map((t) => condition(t, 'True', now)),
    containerStatuses: containers(pod, { running: { startedAt: rec.startedAt } }, true),
  } as PodStatus;
}

/**
 * A pod whose process ended with `exitCode` (undefined: it ended while the runtime was
 * down, so its code is unknown), started at `startedAt`. A failed container's `message` is
 * the tail of its log, as kubelet's `FallbackToLogsOnError` gives it.
 */
export function terminatedStatus(
  pod: Pod,
  exitCode: number | undefined,
  startedAt: string,
  logTail = '',
): PodStatus {
  const now = stamp();
  const ok = exitCode === 0;
  const terminated =
    exitCode === undefined
      ? {
          exitCode: 137,
          reason: 'ContainerStatusUnknown',
          message: 'the process ended while the runtime was down',
          finishedAt: now,
        }
      : {
          exitCode,
          reason: ok ? 'Completed' : 'Error',
          ...(!ok && logTail ? { message: logTail } : {}),
          startedAt,
          finishedAt: now,
        };
  return {
    ...pod.status,
    phase: ok ? 'Succeeded' : 'Failed',
    conditions: [
      condition('PodScheduled', 'True', now),
      condition('ContainersReady', 'False', now, 'PodCompleted'),
      condition('Ready', 'False', now, 'PodCompleted'),
    ],
    containerStatuses: containers(pod, { terminated }, false),
  } as PodStatus;
}
