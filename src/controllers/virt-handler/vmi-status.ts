/**
 * The VMI status virt-handler writes, from what the launcher reports about its domain.
 * Pure: the handler writes the result only when it differs from what is stored, so a VMI
 * is written once per real change (Scheduled -> Running is one write).
 */

import type { VirtualMachineInstance, VirtualMachineInstanceCondition } from '../../api/generated/types';
import type { LauncherDomain } from '../launcher-protocol/domain-report';
import { accessCredentialConditions } from './access-credential-status';
import { AGENT_CONNECTED, applyGuestAgentStatus } from './guest-agent-status';
import { liveMigrationCondition } from './live-migratable';

/** What the handler knows about one VMI's launcher. */
export type LauncherView =
  | { kind: 'domain'; domain: LauncherDomain | undefined }
  /** The launcher does not answer and its pod is gone or finished, or it stopped answering. */
  | { kind: 'gone'; lastDomain: LauncherDomain | undefined; why: string };

type Condition = VirtualMachineInstanceCondition;

function setCond(conds: Condition[], next: Condition, now: string): Condition[] {
  const old = conds.find((c) => c.type === next.type);
  if (old && old.status === next.status && (old.reason ?? '') === (next.reason ?? '')) return conds;
  return [
    ...conds.filter((c) => c.type !== next.type),
    {
      lastProbeTime: null as unknown as string,
      lastTransitionTime: old && old.status === next.status ? old.lastTransitionTime : now,
      ...next,
    },
  ];
}

const without = (conds: Condition[], type: string) => conds.filter((c) => c.type !== type);

/** How a finished domain ended: powered off or stopped on request is Succeeded, anything else Failed. */
export function finalPhaseOf(domain: LauncherDomain | undefined): 'Succeeded' | 'Failed' {
  if (!domain) return 'Failed';
  if (domain.state === 'crashed' || domain.reason === 'crashed' || domain.reason === 'failed')
    return 'Failed';
  return 'Succeeded';
}

/** The next VMI (a copy) for what the launcher reports; `now` stamps transitions. */
export function nextHandlerStatus(
  vmi: VirtualMachineInstance,
  view: LauncherView,
  now: string,
): VirtualMachineInstance {
  const out = structuredClone(vmi);
  out.status ??= {};
  const st = out.status;
  const phase = st.phase ?? '';
  let conds = st.conditions ?? [];
  let next = phase;
  if (view.kind === 'gone') {
    const d = view.lastDomain;
    next = d?.finished ? finalPhaseOf(d) : 'Failed';
    if (next === 'Failed') st.reason = view.why;
  } else {
    const d = view.domain;
    if (d?.finished) {
      next = finalPhaseOf(d);
    } else if (d && (d.state === 'running' || d.state === 'paused' || d.state === 'blocked')) {
      next = 'Running';
      if (d.state === 'paused') {
        conds = setCond(
          conds,
          { type: 'Paused', status: 'True', reason: 'PausedByUser', message: 'VMI was paused by user' },
          now,
        );
      } else {
        conds = without(conds, 'Paused');
      }
    }
  }
  if (next === 'Running') {
    // Ready is the VMI controller's, from the launcher pod's Ready (upstream's
    // syncReadyConditionFromPod), never written here: on a kubelet node the pod turns Ready
    // only after virt-controller has seen Running and set the pod's unpaused readiness
    // gate, and a Ready=True written here with the phase flipped with the controller's
    // False (ReadinessGatesNotReady) about 20 times until the kubelet caught up.
    const migratable = liveMigrationCondition(vmi);
    conds = setCond(conds, migratable.condition, now);
    st.migrationMethod = migratable.blockMigration ? 'BlockMigration' : 'LiveMigration';
    // AgentConnected, guestOSInfo and interfaces from the guest agent's report.
    st.conditions = conds;
    const d = view.kind === 'domain' ? view.domain : undefined;
    applyGuestAgentStatus(st, vmi.spec, d?.guestAgent, now, d?.interfaces, d?.secondaryInterfaces);
    conds = accessCredentialConditions(st.conditions, d?.accessCredential, now);
    // upstream: "frozen" while a freeze was requested and not undone, else unset.
    if (d?.fsFreezeStatus === 'frozen') st.fsFreezeStatus = 'frozen';
    else delete st.fsFreezeStatus;
  } else if (next === 'Succeeded' || next === 'Failed') {
    delete st.fsFreezeStatus;
    conds = without(conds, 'Paused');
    conds = without(conds, AGENT_CONNECTED);
    conds = setCond(
      conds,
      {
        type: 'Ready',
        status: 'False',
        reason: 'GuestNotRunning',
        message: 'Guest VM is not reported as running',
      },
      now,
    );
  }
  st.conditions = conds;
  if (next !== phase) {
    st.phase = next;
    const ts = st.phaseTransitionTimestamps ?? [];
    if (!ts.some((t) => t.phase === next)) {
      st.phaseTransitionTimestamps = [...ts, { phase: next, phaseTransitionTimestamp: now }];
    }
  }
  return out;
}
