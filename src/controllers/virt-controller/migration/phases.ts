/**
 * The migration state machine, as upstream's migration controller
 * (pkg/virt-controller/watch/migration): the next phase of a
 * VirtualMachineInstanceMigration from its VMI, its target pod and the migration state
 * the node agents write into the VMI. Pure.
 */
import type { VirtualMachineInstance, VirtualMachineInstanceMigration } from '../../../api/generated/types';
import type { Pod } from '../../common/pod';
import { podDownOrGoingDown, podReadyForVmi, unschedulableCondition } from '../vmi/pod-state';

/** Migration phases (upstream VirtualMachineInstanceMigrationPhase). */
export const MigrationPhase = {
  Unset: '',
  Pending: 'Pending',
  Scheduling: 'Scheduling',
  Scheduled: 'Scheduled',
  PreparingTarget: 'PreparingTarget',
  TargetReady: 'TargetReady',
  Running: 'Running',
  Succeeded: 'Succeeded',
  Failed: 'Failed',
} as const;

export const isMigrationFinal = (phase?: string) =>
  phase === MigrationPhase.Succeeded || phase === MigrationPhase.Failed;

/** What the controller should do next. */
export type MigrationStep =
  | { kind: 'phase'; phase: string; reason?: string }
  | { kind: 'createTargetPod' }
  /** Hand the migration to the node agents: write migrationState onto the VMI, then PreparingTarget. */
  | { kind: 'handOff'; targetPod: Pod }
  /** The migration object was deleted while the guest is moving: ask the source to abort (`abortRequested`). */
  | { kind: 'abort' }
  | { kind: 'none' };

export interface MigrationInput {
  migration: VirtualMachineInstanceMigration;
  vmi?: VirtualMachineInstance;
  targetPod?: Pod;
  /**
   * The migration named by the VMI's `status.migrationState`, when it is another one and
   * still in the store (upstream's canMigrateVMI lets a migration take over from one that
   * is gone or final).
   */
  stateOwner?: VirtualMachineInstanceMigration;
}

/** Decides the next step of a migration. */
export function nextMigrationStep({ migration, vmi, targetPod, stateOwner }: MigrationInput): MigrationStep {
  const phase = migration.status?.phase ?? '';
  const uid = migration.metadata?.uid;
  const state = vmi?.status?.migrationState;
  const ours = state?.migrationUid === uid;
  if (isMigrationFinal(phase)) return { kind: 'none' };
  if (migration.metadata?.deletionTimestamp) {
    // Deleted while the guest is on its way: the source aborts, its report ends the migration.
    if (ours && state?.startTimestamp && !state.endTimestamp && !state.completed) {
      return state.abortRequested ? { kind: 'none' } : { kind: 'abort' };
    }
    if (ours && state?.failed)
      return {
        kind: 'phase',
        phase: MigrationPhase.Failed,
        reason: state.failureReason ?? 'migration failed',
      };
    if (ours && state?.completed) return { kind: 'phase', phase: MigrationPhase.Succeeded };
    return { kind: 'phase', phase: MigrationPhase.Failed, reason: 'migration object deleted' };
  }
  if (!vmi)
    return {
      kind: 'phase',
      phase: MigrationPhase.Failed,
      reason: `VirtualMachineInstance ${migration.spec.vmiName} does not exist`,
    };
  if (
    vmi.metadata?.deletionTimestamp ||
    vmi.status?.phase === 'Succeeded' ||
    vmi.status?.phase === 'Failed'
  ) {
    return { kind: 'phase', phase: MigrationPhase.Failed, reason: 'the VMI stopped during migration' };
  }
  switch (phase) {
    case MigrationPhase.Unset:
      return { kind: 'phase', phase: MigrationPhase.Pending };
    case MigrationPhase.Pending:
      if (vmi.status?.phase !== 'Running') return { kind: 'none' };
      if ((vmi.status.conditions ?? []).some((c) => c.type === 'LiveMigratable' && c.status === 'False')) {
        return { kind: 'phase', phase: MigrationPhase.Failed, reason: 'the VMI is not live-migratable' };
      }
      // Another migration in flight (upstream's canMigrateVMI: not one that is gone or final).
      if (state && !state.completed && !ours && stateOwner && !isMigrationFinal(stateOwner.status?.phase))
        return { kind: 'none' };
      return targetPod ? { kind: 'phase', phase: MigrationPhase.Scheduling } : { kind: 'createTargetPod' };
    case MigrationPhase.Scheduling:
      if (!targetPod)
        return { kind: 'phase', phase: MigrationPhase.Failed, reason: 'target pod disappeared' };
      if (podDownOrGoingDown(targetPod))
        return { kind: 'phase', phase: MigrationPhase.Failed, reason: 'target pod failed' };
      if (unschedulableCondition(targetPod)) return { kind: 'none' };
      return podReadyForVmi(targetPod)
        ? { kind: 'phase', phase: MigrationPhase.Scheduled }
        : { kind: 'none' };
    case MigrationPhase.Scheduled:
      if (!targetPod || podDownOrGoingDown(targetPod))
        return { kind: 'phase', phase: MigrationPhase.Failed, reason: 'target pod failed' };
      return { kind: 'handOff', targetPod };
    case MigrationPhase.PreparingTarget:
    case MigrationPhase.TargetReady:
    case MigrationPhase.Running: {
      if (!ours) return { kind: 'none' };
      if (state?.failed)
        return {
          kind: 'phase',
          phase: MigrationPhase.Failed,
          reason: state.failureReason ?? 'migration failed',
        };
      if ((!targetPod || podDownOrGoingDown(targetPod)) && !state?.startTimestamp) {
        return { kind: 'phase', phase: MigrationPhase.Failed, reason: 'target pod failed' };
      }
      // One phase per step, as upstream: each is recorded even when the agents were quicker.
      if (phase === MigrationPhase.PreparingTarget) {
        return state?.targetNodeAddress
          ? { kind: 'phase', phase: MigrationPhase.TargetReady }
          : { kind: 'none' };
      }
      if (phase === MigrationPhase.TargetReady) {
        return state?.startTimestamp ? { kind: 'phase', phase: MigrationPhase.Running } : { kind: 'none' };
      }
      return state?.completed ? { kind: 'phase', phase: MigrationPhase.Succeeded } : { kind: 'none' };
    }
    default:
      return { kind: 'none' };
  }
}
