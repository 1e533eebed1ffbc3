/**
 * The probes of one running pod's compute container under the local pod runtime, as the
 * kubelet's prober manager keeps them: a readiness worker whose result is the container's
 * `ready` (and so the pod's Ready condition, which the VMI controller copies into the
 * VMI's), and a liveness worker whose failure makes the runtime kill the container (the
 * launcher pod's restartPolicy is Never, so the pod then fails, as on a kubelet).
 */
import { readFileSync } from 'node:fs';
import type { Pod } from '../../common/pod';
import type { EventRecorder } from '../../runtime/event-recorder';
import type { KubeObject } from '../../runtime/types';
import { commandArgv } from './container-command';
import type { ProbeOutcome, ProbeTarget } from './probe-action';
import { type ProbeKind, ProbeWorker } from './probe-worker';

/** Options of {@link PodProbes.start}. */
export interface PodProbesOptions {
  pod: Pod;
  /** When the container started. */
  startedAt: string;
  /** The pod IP, when it has a network of its own. */
  podIP?: string;
  /** Its network namespace, entered by exec probes. */
  netns?: string;
  /** The container's environment (exec probes run with it). */
  env: NodeJS.ProcessEnv;
  commands?: Record<string, string[]>;
  /** The readiness result changed. */
  onReadyChange: () => void;
  /** The liveness probe failed `failureThreshold` times in a row: kill the container. */
  onLivenessFailed: (last: ProbeOutcome) => void;
  /** One failed attempt (kubelet records an `Unhealthy` event for each). */
  onUnhealthy: (kind: ProbeKind, last: ProbeOutcome) => void;
}

/** The running probes of one pod. */
export class PodProbes {
  private constructor(
    private readonly readiness: ProbeWorker | undefined,
    private readonly liveness: ProbeWorker | undefined,
  ) {}

  /** Starts the compute container's probes; undefined when it has none. */
  static start(o: PodProbesOptions): PodProbes | undefined {
    const c = o.pod.spec?.containers?.[0];
    if (!c || (!c.readinessProbe && !c.livenessProbe)) return undefined;
    const target: ProbeTarget = {
      ip: o.podIP ?? '127.0.0.1',
      container: c,
      env: o.env,
      netns: o.netns,
      execArgv: (command) => {
        const argv = commandArgv(o.pod, 'spec.containers[0] probe exec.command[0]', command, o.commands);
        return o.netns ? ['nsenter', `--net=${o.netns}`, '--', ...argv] : argv;
      },
    };
    const worker = (kind: ProbeKind) => {
      const probe = kind === 'readiness' ? c.readinessProbe : c.livenessProbe;
      if (!probe) return undefined;
      return new ProbeWorker({
        kind,
        probe,
        target,
        startedAt: o.startedAt,
        onFailure: (last) => o.onUnhealthy(kind, last),
        onResult: (ok, last) => {
          if (kind === 'readiness') o.onReadyChange();
          else if (!ok) o.onLivenessFailed(last);
        },
      });
    };
    const probes = new PodProbes(worker('readiness'), worker('liveness'));
    probes.readiness?.start();
    probes.liveness?.start();
    return probes;
  }

  /** The container's readiness: the readiness probe's result, true without one. */
  get ready(): boolean {
    return this.readiness?.result ?? true;
  }

  stop(): void {
    this.readiness?.stop();
    this.liveness?.stop();
  }
}

/** What a pod's process is, for its probes. */
export interface ProbedProcess {
  startedAt: string;
  net?: { ip: string; netns: string };
  env: NodeJS.ProcessEnv;
  commands?: Record<string, string[]>;
}

/** What the runtime does on probe results. */
export interface ProbeReactions {
  events: Pick<EventRecorder, 'event'>;
  /** Requeue the pod (its readiness changed: the status is rewritten). */
  requeue: () => void;
  /** Kill the container (its liveness probe failed). */
  kill: () => void;
}

/**
 * Starts `pod`'s probes with kubelet's reactions: an `Unhealthy` event per failed attempt,
 * a requeue when readiness changes, and on a liveness failure a `Killing` event and the
 * container killed (restartPolicy Never: the pod then fails and the VMI with it).
 */
export function startPodProbes(pod: Pod, proc: ProbedProcess, react: ProbeReactions): PodProbes | undefined {
  const subject = { apiVersion: 'v1', kind: 'Pod', ...pod } as KubeObject;
  const probes: PodProbes | undefined = PodProbes.start({
    pod,
    startedAt: proc.startedAt,
    podIP: proc.net?.ip,
    netns: proc.net?.netns,
    env: proc.env,
    commands: proc.commands,
    onReadyChange: react.requeue,
    onUnhealthy: (kind, last) =>
      react.events.event(
        subject,
        'Warning',
        'Unhealthy',
        `${kind === 'readiness' ? 'Readiness' : 'Liveness'} probe failed: ${last.message}`,
      ),
    onLivenessFailed: () => {
      react.events.event(
        subject,
        'Normal',
        'Killing',
        'Container compute failed liveness probe, will be restarted',
      );
      probes?.stop();
      react.kill();
    },
  });
  return probes;
}

/** The environment of a running process (an adopted container's), empty when unreadable. */
export function processEnv(pid: number): NodeJS.ProcessEnv {
  try {
    const env: NodeJS.ProcessEnv = {};
    for (const kv of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
      const i = kv.indexOf('=');
      if (i > 0) env[kv.slice(0, i)] = kv.slice(i + 1);
    }
    return env;
  } catch {
    return {};
  }
}
