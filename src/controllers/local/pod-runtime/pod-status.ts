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

/** One status per container of the pod, all in `state`; `ready` defaults to `running`. */
const containers = (pod: Pod, state: ContainerState, running: boolean, ready = running) =>
  (pod.spec?.containers ?? []).map((c) => ({
    name: c.name,
    image: c.image,
    imageID: '',
    ready,
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

/**
 * A pod whose process `rec` runs, with its pod IP when it has a network of its own;
 * `ready` is its container's readiness (false while a readiness probe has not passed).
 */
export function runningStatus(pod: Pod, rec: ProcessRecord, podIP?: string, ready = true): PodStatus {
  const now = stamp();
  const notReady = (t: string) => condition(t, 'False', now, 'ContainersNotReady');
  return {
    phase: 'Running',
    hostIP: '127.0.0.1',
    ...(podIP ? { podIP, podIPs: [{ ip: podIP }] } : {}),
    startTime: rec.startedAt,
    qosClass: 'Burstable',
    conditions: [
      ...['PodScheduled', 'Initialized', 'kubevirt.io/virtual-machine-unpaused'].map((t) =>
        condition(t, 'True', now),
      ),
      ...['ContainersReady', 'Ready'].map((t) => (ready ? condition(t, 'True', now) : notReady(t))),
    ],
    containerStatuses: containers(pod, { running: { startedAt: rec.startedAt } }, true, ready),
  } as PodStatus;
}

/** Whether a running pod's status says its containers are ready. */
export function containersReady(pod: Pod): boolean {
  const statuses = pod.status?.containerStatuses ?? [];
  return statuses.length > 0 && statuses.every((c) => c.ready);
}

/**
 * A running pod's status with its containers' readiness set to `ready`, as kubelet writes
 * it: the containers' `ready`, ContainersReady, and Ready (which also needs every
 * readiness gate's condition True); other conditions are kept.
 */
export function withReadiness(pod: Pod, ready: boolean): PodStatus {
  const now = stamp();
  const status = structuredClone(pod.status ?? {}) as PodStatus;
  const gates = pod.spec?.readinessGates ?? [];
  const gatesTrue = gates.every(
    (g) => status.conditions?.find((c) => c.type === g.conditionType)?.status === 'True',
  );
  const set = (type: string, on: boolean) => {
    status.conditions ??= [];
    const conds = status.conditions;
    const i = conds.findIndex((c) => c.type === type);
    const next = on ? condition(type, 'True', now) : condition(type, 'False', now, 'ContainersNotReady');
    if (i < 0) conds.push(next as (typeof conds)[number]);
    else if (conds[i].status !== next.status) conds[i] = next as (typeof conds)[number];
  };
  set('ContainersReady', ready);
  set('Ready', ready && gatesTrue);
  status.containerStatuses = (status.containerStatuses ?? []).map((c) => ({ ...c, ready }));
  return status;
}

/**
 * A pod whose process ended with `exitCode` (undefined: it ended while the runtime was
 * down, so its code is unknown), started at `startedAt`. `message` is the container's
 * termination message, or a failed container's log tail (kubelet's `FallbackToLogsOnError`).
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
          ...(logTail ? { message: logTail } : {}),
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
