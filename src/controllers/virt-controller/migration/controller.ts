/**
 * The migration controller (upstream pkg/virt-controller/watch/migration): for a
 * VirtualMachineInstanceMigration, renders and creates the target launcher pod on another
 * node, hands the migration to the node agents by writing `status.migrationState` onto
 * the VMI once the target pod runs, and follows what the agents report through the
 * phases PreparingTarget, TargetReady, Running, Succeeded or Failed. The data path (the
 * actual memory copy) is the node side's.
 */
import type { ClusterConfig } from '../../../api/config/cluster-config';
import type {
  MigrationPolicy,
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from '../../../api/generated/types';
import { Finalizers } from '../../../api/labels';
import {
  type ControllerDeps,
  type Expectations,
  type KeyReconciler,
  type Lister,
  type PodsByVmi,
  type ReconcileResult,
  timestamp,
} from '../../common/controller-ports';
import { MigrationLabels } from '../../common/migration-labels';
import type { Pod } from '../../common/pod';
import { VmiResource } from '../../common/vmi-resource';
import { ConflictError, NotFoundError } from '../../runtime/errors';
import { PodType, VirtualMachineInstanceMigrationType } from '../../runtime/resources';
import { sameJson } from '../../runtime/same-json';
import type { KubeObject } from '../../runtime/types';
import { type LauncherPodOptions, renderLauncherPod } from '../services/pod-renderer';
import { setCondition } from '../vmi/status';
import { MigrationEventReason } from './events';
import { requeueDelayMs } from './limits';
import { pendingTargetPodVerdict } from './pending-timeout';
import { isMigrationFinal, MigrationPhase, nextMigrationStep } from './phases';
import { effectiveMigrationConfiguration } from './policy';
import { markFailedOnVmi } from './vmi-failure';
import { MigrationWaits } from './waits';

export { MigrationEventReason } from './events';

export interface MigrationControllerDeps extends ControllerDeps {
  migrations: Lister<VirtualMachineInstanceMigration>;
  vmis: Lister<VirtualMachineInstance>;
  pods: PodsByVmi<Pod>;
  expectations: Expectations;
  config: () => ClusterConfig;
  podOptions: LauncherPodOptions;
  onWrite?: (kind: string, verb: 'create' | 'update' | 'delete') => void;
  /** Seconds a target pod may stay pending (upstream's defaults: 300 unschedulable, 900 any). */
  pendingTimeouts?: { unschedulable: number; catchAll: number };
  /** The MigrationPolicies (migrations.kubevirt.io); none when absent. */
  policies?: () => MigrationPolicy[];
  /** A namespace's labels, for the policies' namespace selectors. */
  namespaceLabels?: (namespace: string) => Promise<Record<string, string> | undefined>;
}

/**
 * Reconciles one VirtualMachineInstanceMigration (`namespace/name` key): creates the
 * target launcher pod, hands the migration to the node agents through the VMI's
 * `status.migrationState`, and records their progress as the migration's phase.
 */
export class MigrationController implements KeyReconciler {
  /** The last wait reason recorded per migration uid (one Event per change, not per retry). */
  private readonly waits: MigrationWaits;

  constructor(private readonly d: MigrationControllerDeps) {
    this.waits = new MigrationWaits(d);
  }

  private now(): string {
    return timestamp(this.d.now?.() ?? new Date());
  }

  async reconcile(key: string): Promise<ReconcileResult | undefined> {
    const m = this.d.migrations.get(key);
    if (!m) {
      this.d.expectations.delete(key);
      return undefined;
    }
    if (!this.d.expectations.satisfied(key)) return undefined;
    const ns = m.metadata?.namespace;
    const vmi = m.spec.vmiName ? this.d.vmis.get(`${ns}/${m.spec.vmiName}`) : undefined;
    const targetPod = vmi
      ? this.d.pods
          .byVmiUid(vmi.metadata?.uid ?? '')
          .find((p) => p.metadata?.labels?.[MigrationLabels.jobUid] === m.metadata?.uid)
      : undefined;

    const phase = m.status?.phase ?? '';
    if (isMigrationFinal(phase)) {
      this.waits.forget(m);
      if (phase === MigrationPhase.Failed) await this.markFailedOnVmi(m, vmi);
      await this.keepFinalState(m, vmi);
      await this.dropFinalizer(m);
      return undefined;
    }
    if (
      phase === '' &&
      !m.metadata?.finalizers?.includes(Finalizers.migration) &&
      !m.metadata?.deletionTimestamp
    ) {
      await this.update(m, {
        ...m,
        metadata: {
          ...m.metadata,
          finalizers: [...(m.metadata?.finalizers ?? []), Finalizers.migration],
          labels: { ...(m.metadata?.labels ?? {}), [MigrationLabels.vmiName]: m.spec.vmiName ?? '' },
        },
      });
      return undefined;
    }

    let recheckMs: number | undefined;
    if ((phase === MigrationPhase.Pending || phase === MigrationPhase.Scheduling) && vmi && targetPod) {
      const verdict = pendingTargetPodVerdict(
        m,
        targetPod,
        this.d.now?.() ?? new Date(),
        this.d.pendingTimeouts,
      );
      if (verdict?.unschedulable) {
        this.d.recorder.event(
          m,
          'Warning',
          MigrationEventReason.MigrationTargetPodUnschedulable,
          `Migration target pod for VMI [${ns}/${vmi.metadata?.name}] is currently unschedulable.`,
        );
      }
      if (verdict?.timedOut) {
        await this.d.client
          .delete(PodType, targetPod.metadata?.name ?? '', { namespace: ns })
          .catch((e) => (e instanceof NotFoundError ? undefined : Promise.reject(e)));
        this.d.onWrite?.('Pod', 'delete');
        this.d.recorder.event(m, 'Normal', MigrationEventReason.SuccessfulDelete, verdict.timedOut);
        this.d.recorder.event(
          m,
          'Warning',
          MigrationEventReason.FailedMigration,
          `Migration failed: ${verdict.timedOut}`,
        );
        await this.setPhase(m, MigrationPhase.Failed, verdict.timedOut);
        return undefined;
      }
      recheckMs = verdict?.recheckMs;
    }

    const ownerUid = vmi?.status?.migrationState?.migrationUid;
    const stateOwner =
      ownerUid && ownerUid !== m.metadata?.uid
        ? this.d.migrations.list().find((x) => x.metadata?.uid === ownerUid)
        : undefined;
    const step = nextMigrationStep({ migration: m, vmi, targetPod, stateOwner });
    switch (step.kind) {
      case 'none':
        return recheckMs ? { requeueAfterMs: recheckMs } : undefined;
      case 'createTargetPod': {
        const backoff = this.waits.backoffMs(m, vmi!);
        if (backoff > 0) return { requeueAfterMs: backoff };
        const wait = this.waits.limitWait(m, vmi!);
        if (wait) return { requeueAfterMs: Math.min(requeueDelayMs(m), recheckMs ?? Infinity) };
        this.waits.forget(m);
        await this.createTargetPod(key, m, vmi!);
        await this.setPhase(m, MigrationPhase.Scheduling);
        return undefined;
      }
      case 'handOff':
        await this.handOff(m, vmi!, step.targetPod);
        await this.setPhase(m, MigrationPhase.PreparingTarget);
        return undefined;
      case 'abort':
        await this.requestAbort(vmi!);
        return undefined;
      case 'phase':
        if (step.phase === MigrationPhase.Failed) {
          // upstream marks the VMI first: the agents never will for a migration they did not start.
          await this.markFailedOnVmi(m, vmi);
          if (
            targetPod &&
            !targetPod.metadata?.deletionTimestamp &&
            !vmi?.status?.migrationState?.startTimestamp
          ) {
            await this.d.client
              .delete(PodType, targetPod.metadata?.name ?? '', { namespace: ns })
              .catch(() => undefined);
          }
          this.d.recorder.event(
            m,
            'Warning',
            MigrationEventReason.FailedMigration,
            `Migration failed: ${step.reason ?? ''}`,
          );
        }
        if (step.phase === MigrationPhase.Succeeded) {
          this.d.recorder.event(
            m,
            'Normal',
            MigrationEventReason.SuccessfulMigration,
            'Source node reported migration succeeded',
          );
        }
        await this.setPhase(m, step.phase, step.reason);
        return undefined;
    }
  }

  private async createTargetPod(
    key: string,
    m: VirtualMachineInstanceMigration,
    vmi: VirtualMachineInstance,
  ): Promise<void> {
    const pod = renderLauncherPod(vmi, this.d.config(), this.d.podOptions);
    pod.metadata!.labels = { ...pod.metadata!.labels, [MigrationLabels.jobUid]: m.metadata?.uid ?? '' };
    if (m.spec.addedNodeSelector)
      pod.spec!.nodeSelector = { ...pod.spec!.nodeSelector, ...m.spec.addedNodeSelector };
    // Never on the source node: not next to any other launcher of this VMI.
    pod.spec!.affinity = {
      ...((pod.spec!.affinity as object) ?? {}),
      podAntiAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: [
          {
            labelSelector: { matchLabels: { 'kubevirt.io/created-by': vmi.metadata?.uid ?? '' } },
            topologyKey: 'kubernetes.io/hostname',
          },
        ],
      },
    };
    this.d.expectations.expectCreations(key, 1);
    try {
      const created = await this.d.client.create<KubeObject>(PodType, pod as KubeObject);
      this.d.onWrite?.('Pod', 'create');
      this.d.recorder.event(
        m,
        'Normal',
        MigrationEventReason.SuccessfulCreate,
        `Created migration target pod ${created.metadata?.name}`,
      );
    } catch (err) {
      this.d.expectations.creationObserved(key);
      this.d.recorder.event(
        m,
        'Warning',
        MigrationEventReason.FailedCreate,
        `Error creating migration target pod: ${(err as Error).message}`,
      );
      throw err;
    }
  }

  /** upstream's handleMarkMigrationFailedOnVMI (./vmi-failure.ts). */
  private markFailedOnVmi(m: VirtualMachineInstanceMigration, vmi?: VirtualMachineInstance): Promise<void> {
    return markFailedOnVmi(this.d, m, vmi, this.now());
  }

  /** Writes migrationState onto the VMI: the node agents take over from here. */
  private async handOff(
    m: VirtualMachineInstanceMigration,
    vmi: VirtualMachineInstance,
    target: Pod,
  ): Promise<void> {
    const next = structuredClone(vmi);
    next.metadata = {
      ...next.metadata,
      labels: { ...(next.metadata?.labels ?? {}), [MigrationLabels.targetNode]: target.spec?.nodeName ?? '' },
    };
    const { configuration, policyName } = await effectiveMigrationConfiguration(
      vmi,
      this.d.config().migrations,
      this.d.policies?.() ?? [],
      this.d.namespaceLabels,
    );
    next.status = {
      ...next.status,
      migrationState: {
        migrationUid: m.metadata?.uid,
        sourceNode: vmi.status?.nodeName,
        targetNode: target.spec?.nodeName,
        targetPod: target.metadata?.name,
        sourcePod: this.currentPod(vmi, target)?.metadata?.name,
        mode: 'PreCopy',
        migrationConfiguration: configuration,
        ...(policyName ? { migrationPolicyName: policyName } : {}),
      },
    };
    await this.d.client.update(VmiResource, next as never);
    this.d.onWrite?.('VirtualMachineInstance', 'update');
    this.d.recorder.event(
      m,
      'Normal',
      MigrationEventReason.SuccessfulHandOver,
      'Migration target pod is ready for preparation by virt-handler.',
    );
  }

  /**
   * upstream's CurrentVMIPod: the VMI's most recent launcher pod on its node (the
   * migration's source), never the target.
   */
  private currentPod(vmi: VirtualMachineInstance, target: Pod): Pod | undefined {
    const node = vmi.status?.nodeName;
    return this.d.pods
      .byVmiUid(vmi.metadata?.uid ?? '')
      .filter((p) => p.metadata?.uid !== target.metadata?.uid && (!node || p.spec?.nodeName === node))
      .sort((a, b) =>
        String(b.metadata?.creationTimestamp ?? '').localeCompare(
          String(a.metadata?.creationTimestamp ?? ''),
        ),
      )[0];
  }

  /** Asks the source node to abort (upstream markMigrationAbortInVmiStatus). */
  private async requestAbort(vmi: VirtualMachineInstance): Promise<void> {
    const next = structuredClone(vmi);
    next.status = {
      ...next.status,
      migrationState: { ...next.status?.migrationState, abortRequested: true },
    };
    await this.d.client.update(VmiResource, next as never);
    this.d.onWrite?.('VirtualMachineInstance', 'update');
  }

  private async setPhase(m: VirtualMachineInstanceMigration, phase: string, reason?: string): Promise<void> {
    if ((m.status?.phase ?? '') === phase) return;
    const now = this.now();
    const status = structuredClone(m.status ?? {});
    status.phase = phase;
    status.phaseTransitionTimestamps = [
      ...(status.phaseTransitionTimestamps ?? []),
      { phase, phaseTransitionTimestamp: now },
    ];
    if (phase === MigrationPhase.Failed && reason) {
      status.conditions = setCondition(
        (status.conditions ?? []) as never,
        { type: 'Failed', status: 'True', reason: 'MigrationFailed', message: reason },
        now,
      ) as never;
    }
    try {
      await this.d.client.updateStatus(VirtualMachineInstanceMigrationType, { ...m, status } as never);
      this.d.onWrite?.('VirtualMachineInstanceMigration', 'update');
    } catch (err) {
      if (err instanceof ConflictError || err instanceof NotFoundError) return;
      throw err;
    }
  }

  /**
   * upstream: a final migration keeps the VMI's finished migration state for it in its
   * own `status.migrationState` (source and target node, pods, timestamps, failure).
   */
  private async keepFinalState(
    m: VirtualMachineInstanceMigration,
    vmi: VirtualMachineInstance | undefined,
  ): Promise<void> {
    const state = vmi?.status?.migrationState;
    if (!state?.completed || state.migrationUid !== m.metadata?.uid) return;
    if (sameJson(m.status?.migrationState, state)) return;
    try {
      await this.d.client.updateStatus(VirtualMachineInstanceMigrationType, {
        ...m,
        status: { ...m.status, migrationState: structuredClone(state) },
      } as never);
      this.d.onWrite?.('VirtualMachineInstanceMigration', 'update');
    } catch (err) {
      if (err instanceof ConflictError || err instanceof NotFoundError) return;
      throw err;
    }
  }

  private async dropFinalizer(m: VirtualMachineInstanceMigration): Promise<void> {
    const f = m.metadata?.finalizers ?? [];
    if (!f.includes(Finalizers.migration)) return;
    await this.update(m, {
      ...m,
      metadata: { ...m.metadata, finalizers: f.filter((x) => x !== Finalizers.migration) },
    });
  }

  private async update(
    old: VirtualMachineInstanceMigration,
    next: VirtualMachineInstanceMigration,
  ): Promise<void> {
    if (sameJson(old.metadata, next.metadata)) return;
    try {
      await this.d.client.update(VirtualMachineInstanceMigrationType, next as never);
      this.d.onWrite?.('VirtualMachineInstanceMigration', 'update');
    } catch (err) {
      if (err instanceof ConflictError || err instanceof NotFoundError) return;
      throw err;
    }
  }
}
