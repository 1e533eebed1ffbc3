/**
 * The VM controller's run-strategy decision, as upstream's syncRunStrategy
 * (pkg/virt-controller/watch/vm/vm.go): given the VM's strategy, its pending state
 * change request and the current VMI, what to do next. Pure; the reconciler acts on it.
 */

/** The run strategies of `spec.runStrategy`. */
export const RunStrategy = {
  Always: 'Always',
  RerunOnFailure: 'RerunOnFailure',
  Manual: 'Manual',
  Halted: 'Halted',
  Once: 'Once',
} as const;
export type RunStrategyName = (typeof RunStrategy)[keyof typeof RunStrategy];

/** State change request actions of `status.stateChangeRequests[]`. */
export const StateChangeAction = { Start: 'Start', Stop: 'Stop' } as const;

/** A VMI as the decision sees it. */
export interface VmiState {
  uid: string;
  phase?: string;
  deleting: boolean;
}

/** A state change request (`status.stateChangeRequests[0]`). */
export interface StateChangeRequest {
  action: string;
  uid?: string;
  data?: Record<string, string>;
}

/** What the VM needs, before the decision. */
export interface RunStrategyInput {
  /** `spec.runStrategy` / `spec.running` as the VM declares them. */
  runStrategy?: string;
  running?: boolean;
  /** The strategy recorded in `status.runStrategy` at the last sync. */
  statusRunStrategy?: string;
  stateChangeRequests?: StateChangeRequest[];
  vmi?: VmiState;
  /** Seconds left of the crash-loop backoff (0 when none). */
  backoffSecondsLeft: number;
}

/** The decision. */
export type RunStrategyDecision =
  | { action: 'none' }
  | { action: 'start'; paused: boolean }
  | { action: 'stop'; reason: string; thenRequestStart?: boolean }
  | { action: 'wait'; retryAfterSeconds: number }
  /** Halted with a start request: flip the VM to Always (upstream's start-paused path). */
  | { action: 'setRunStrategyAlways' };

/** Thrown when `running` and `runStrategy` are both set, or the strategy is unknown. */
export class RunStrategyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RunStrategyError';
  }
}

/** upstream `VirtualMachine.RunStrategy()`: `running` maps to Always/Halted; neither means Halted. */
export function effectiveRunStrategy(spec: { runStrategy?: string; running?: boolean }): RunStrategyName {
  if (
    spec.running !== undefined &&
    spec.running !== null &&
    spec.runStrategy !== undefined &&
    spec.runStrategy !== null
  ) {
    throw new RunStrategyError('spec.running: running and runStrategy are mutually exclusive');
  }
  if (spec.running !== undefined && spec.running !== null)
    return spec.running ? RunStrategy.Always : RunStrategy.Halted;
  if (spec.runStrategy === undefined || spec.runStrategy === null) return RunStrategy.Halted;
  if (!Object.values(RunStrategy).includes(spec.runStrategy as RunStrategyName)) {
    throw new RunStrategyError(`spec.runStrategy: unknown run strategy ${JSON.stringify(spec.runStrategy)}`);
  }
  return spec.runStrategy as RunStrategyName;
}

const isFinal = (phase?: string) => phase === 'Succeeded' || phase === 'Failed';

/** The first request is a start request. */
export function hasStartRequest(reqs: StateChangeRequest[] | undefined): boolean {
  return reqs?.[0]?.action === StateChangeAction.Start;
}

/** The first request is a start request asking to start paused. */
export function hasStartPausedRequest(reqs: StateChangeRequest[] | undefined): boolean {
  const r = reqs?.[0];
  return r?.action === StateChangeAction.Start && r.data?.paused === 'true';
}

/** The first request asks to stop exactly this VMI. */
export function hasStopRequestFor(reqs: StateChangeRequest[] | undefined, vmi: VmiState): boolean {
  const r = reqs?.[0];
  return r?.action === StateChangeAction.Stop && r.uid !== undefined && r.uid === vmi.uid;
}

/** Decides the next step for a VM, exactly as upstream's syncRunStrategy switches. */
export function decideRunStrategy(input: RunStrategyInput): RunStrategyDecision {
  const strategy = effectiveRunStrategy(input);
  const reqs = input.stateChangeRequests;
  const vmi = input.vmi;
  const start = (): RunStrategyDecision =>
    input.backoffSecondsLeft > 0
      ? { action: 'wait', retryAfterSeconds: input.backoffSecondsLeft }
      : { action: 'start', paused: hasStartPausedRequest(reqs) };

  switch (strategy) {
    case RunStrategy.Always:
      if (vmi) {
        const forceRestart = hasStopRequestFor(reqs, vmi);
        if ((forceRestart || isFinal(vmi.phase)) && !vmi.deleting) {
          return { action: 'stop', reason: forceRestart ? 'restart requested' : `VMI is ${vmi.phase}` };
        }
        return { action: 'none' };
      }
      return start();

    case RunStrategy.RerunOnFailure:
      if (vmi) {
        const forceStop = hasStopRequestFor(reqs, vmi);
        const failed = vmi.phase === 'Failed';
        if (!vmi.deleting && (forceStop || failed || vmi.phase === 'Succeeded')) {
          return {
            action: 'stop',
            reason: forceStop ? 'stop requested' : `VMI is ${vmi.phase}`,
            thenRequestStart: failed,
          };
        }
        return { action: 'none' };
      }
      // Coming from another strategy starts the VM; otherwise only a start request does.
      if (!hasStartRequest(reqs) && input.statusRunStrategy === strategy) return { action: 'none' };
      return start();

    case RunStrategy.Manual:
      if (vmi) {
        if (hasStopRequestFor(reqs, vmi) && !vmi.deleting)
          return { action: 'stop', reason: 'stop requested' };
        return { action: 'none' };
      }
      return hasStartRequest(reqs)
        ? { action: 'start', paused: hasStartPausedRequest(reqs) }
        : { action: 'none' };

    case RunStrategy.Halted:
      if (!vmi) return hasStartRequest(reqs) ? { action: 'setRunStrategyAlways' } : { action: 'none' };
      return vmi.deleting ? { action: 'none' } : { action: 'stop', reason: 'runStrategy is Halted' };

    case RunStrategy.Once:
      return vmi ? { action: 'none' } : { action: 'start', paused: hasStartPausedRequest(reqs) };
  }
}

/** upstream isSetToStart: whether the VM is configured to be running now. */
export function isSetToStart(
  input: Pick<RunStrategyInput, 'runStrategy' | 'running' | 'stateChangeRequests' | 'vmi'>,
): boolean {
  const strategy = effectiveRunStrategy(input);
  const vmi = input.vmi;
  switch (strategy) {
    case RunStrategy.Always:
      return true;
    case RunStrategy.Halted:
      return false;
    case RunStrategy.Manual:
      return vmi
        ? !hasStopRequestFor(input.stateChangeRequests, vmi)
        : hasStartRequest(input.stateChangeRequests);
    case RunStrategy.RerunOnFailure:
      return vmi ? vmi.phase !== 'Succeeded' : true;
    case RunStrategy.Once:
      return !vmi;
  }
}

/**
 * upstream isTrimFirstChangeRequestNeeded: whether the first state change request has
 * been carried out and can be removed from status.
 */
export function firstRequestDone(reqs: StateChangeRequest[] | undefined, vmi: VmiState | undefined): boolean {
  const r = reqs?.[0];
  if (!r) return false;
  if (r.action === StateChangeAction.Stop) {
    if (!vmi) return true;
    return r.uid === undefined || r.uid !== vmi.uid;
  }
  if (r.action === StateChangeAction.Start) {
    return vmi !== undefined && !vmi.deleting && !isFinal(vmi.phase);
  }
  return false;
}
