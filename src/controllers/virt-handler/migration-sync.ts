/**
 * virt-handler's side of live migration (upstream pkg/virt-handler/vm.go): the handler of
 * the target node prepares the target launcher (SyncMigrationTarget) and reports where
 * the source should send the guest and when the guest arrived; the handler of the source
 * node starts the migration (MigrateVirtualMachine with the cluster's migration options),
 * follows the launcher's migration report into `status.migrationState`, cancels on
 * request, and on success hands the VMI to the target node (`status.nodeName` and the
 * `kubevirt.io/nodeName` label) before telling its own launcher to exit.
 *
 * With a migration proxy (./migration-proxy/wiring.ts) the target advertises its listener
 * ports and the source's launcher goes through the handlers over mutual TLS, as upstream.
 *
 * Deviations from upstream, on purpose:
 * - `targetNodeAddress` may be a libvirt URI (e.g. `qemu+unix:///system?socket=...` for a
 *   second daemon on the same host); the source passes such a value as the launcher's
 *   `TargetURI`, a plain host[:port] lets the launcher build `qemu+tcp://<addr>/system`.
 * - Launcher pods here do not share one path layout, so the target launcher renders the
 *   domain for its own pod; its handler publishes that XML on the target pod
 *   (./migration-target-domain.ts) and the source sends it as `TargetDomainXML`.
 * - `completed` is written only when the migration ended: with the switch to the target
 *   node on success, or together with `failed`; so a Succeeded migration means the VMI
 *   is already on the target node.
 */
import { defaultKubeVirtConfiguration } from '../../api/config/cluster-config';
import type {
  MigrationConfiguration,
  VirtualMachineInstance,
  VirtualMachineInstanceMigrationState,
} from '../../api/generated/types';
import { MigrationLabels } from '../common/migration-labels';
import type { Pod } from '../common/pod';
import { LauncherCommandError } from '../launcher-protocol/client';
import type { LauncherDomain } from '../launcher-protocol/domain-report';
import type { ObjectClient } from '../runtime/types';
import { migrationDisablesTls } from './migration-proxy/manager';
import { type MigrationProxyWiring, proxiedOptions } from './migration-proxy/wiring';
import { handedOver, migrationOptions, rfc3339, sourceReport, withSourceReport } from './migration-state';
import { publishTargetDomainXml, targetDomainXml } from './migration-target-domain';

export {
  handedOver,
  migrationDataHost,
  migrationOptions,
  sourceReport,
  withSourceReport,
} from './migration-state';

/** The launcher calls migration needs (a `LauncherClient` has them). */
export interface MigrationLauncher {
  getDomain(): Promise<unknown>;
  syncMigrationTarget(vmi: unknown): Promise<void>;
  migrateVirtualMachine(vmi: unknown, options: unknown): Promise<void>;
  cancelVirtualMachineMigration(vmi: unknown): Promise<void>;
  deleteVirtualMachine(vmi: unknown): Promise<void>;
}

/** What {@link MigrationSync} needs from its handler. */
export interface MigrationSyncDeps {
  nodeName: string;
  client: ObjectClient;
  /** The VMI's launcher pods on this node (the handler's pod cache). */
  podsOf(vmiUid: string): Pod[];
  /** Whether a pod's launcher serves its command socket. */
  launcherReady(podUid: string): boolean;
  launcher(podUid: string): Promise<MigrationLauncher>;
  /** Forgets a pod's launcher connection (it exits). */
  dropLauncher(podUid: string): Promise<void>;
  /** The domain XML a target launcher wrote in its sockets dir, if any. */
  readTargetXml(podUid: string): Promise<string | undefined>;
  /** Writes the VMI when it differs from `old`. */
  write(old: VirtualMachineInstance, next: VirtualMachineInstance): Promise<void>;
  /** What this node advertises as `targetNodeAddress` (host[:port] or a libvirt URI). */
  migrationAddress?: string;
  /** The cluster's migration configuration (upstream defaults when absent). */
  migrationConfig?: () => MigrationConfiguration;
  /** Carry the migration through the handlers (upstream's migration proxy) instead of straight to `migrationAddress`. */
  proxy?: MigrationProxyWiring;
  /**
   * Prepares the target launcher pod as the handler does any launcher pod before its first
   * sync (devices, network phase 1: upstream's migration target preparation); an error
   * message to retry on, or undefined.
   */
  prepareTargetPod?(vmi: VirtualMachineInstance, pod: Pod): Promise<string | undefined>;
  /** How long the source waits after the job for the target to report the guest running (default 60 s, as upstream). */
  targetReadyTimeoutMs?: number;
  now: () => Date;
  log: (message: string) => void;
}

/** The outcome of the source side for one pass. */
export interface SourceStep {
  /** True: migration wrote (or waits); the handler skips its normal status for this pass. */
  handled: boolean;
  /** Look again after this many ms. */
  again?: number;
  /** Puts the migration fields onto the status the handler writes. */
  apply?: (next: VirtualMachineInstance) => VirtualMachineInstance;
}

/** The role this node plays in the VMI's migration, if any. */
export function migrationRole(
  vmi: VirtualMachineInstance,
  nodeName: string,
): 'source' | 'target' | undefined {
  const st = vmi.status;
  const ms = st?.migrationState;
  if (!ms?.migrationUid) return undefined;
  if (ms.targetNode === nodeName && st?.nodeName !== nodeName) return 'target';
  if (st?.nodeName === nodeName && ms.sourceNode === nodeName && ms.targetNode !== nodeName) return 'source';
  return undefined;
}

/**
 * upstream's isMigrationSource, less the node: the target has given its address and the
 * migration has not completed (succeeded or failed). Meanwhile the source's handler sends
 * its launcher no sync (no start, no live change): one racing the migration's end would
 * define the domain again on the source, and the handler would take it for a guest that
 * shut down (a NIC hotplug's sync did, on the two-node cluster).
 */
export function migrationInFlight(vmi: VirtualMachineInstance): boolean {
  const ms = vmi.status?.migrationState;
  return !!ms?.targetNodeAddress && !ms.completed;
}

/** gRPC codes that retrying cannot fix: INVALID_ARGUMENT, FAILED_PRECONDITION, UNIMPLEMENTED. */
const PERMANENT = new Set([3, 9, 12]);
const permanent = (e: unknown) => e instanceof LauncherCommandError && PERMANENT.has(e.code ?? -1);

const ACTIVE_ON_TARGET = (d: LauncherDomain) =>
  d.state === 'running' || (d.state === 'paused' && d.reason === 'user');

/** The migration roles of one node's handler. */
export class MigrationSync {
  /** Migrations whose target launcher was prepared by this handler. */
  private readonly prepared = new Set<string>();
  /** Migrations whose target launcher was told to go after a failure. */
  private readonly cleaned = new Set<string>();
  /** Migrations this source asked to cancel. */
  private readonly cancelled = new Set<string>();

  constructor(private readonly d: MigrationSyncDeps) {}

  private now(): string {
    return rfc3339(this.d.now());
  }

  private config(): MigrationConfiguration {
    return this.d.migrationConfig?.() ?? defaultKubeVirtConfiguration().migrations ?? {};
  }

  private subject(vmi: VirtualMachineInstance): string {
    return `VirtualMachineInstance ${vmi.metadata?.namespace}/${vmi.metadata?.name}`;
  }

  private withState(vmi: VirtualMachineInstance, ms: VirtualMachineInstanceMigrationState) {
    const next = structuredClone(vmi);
    next.status = { ...next.status, migrationState: ms };
    return next;
  }

  // --- target ---

  /**
   * The target node's part: prepare the target launcher, publish its domain XML, advertise
   * the address, then report the incoming domain (detected, then ready). After a failed
   * migration the target launcher is told to go. Returns ms to look again, or undefined.
   */
  async syncTarget(vmi: VirtualMachineInstance): Promise<number | undefined> {
    const ms = vmi.status?.migrationState ?? {};
    const uid = ms.migrationUid ?? '';
    const pod = this.d
      .podsOf(vmi.metadata?.uid ?? '')
      .find((p) => p.metadata?.labels?.[MigrationLabels.jobUid] === uid);
    const podUid = pod?.metadata?.uid;
    if (!pod || !podUid) return undefined; // its creation re-queues the VMI
    if (ms.failed || ms.completed) {
      await this.cleanTarget(vmi, uid, podUid);
      return undefined;
    }
    if (vmi.status?.phase !== 'Running' || vmi.metadata?.deletionTimestamp) return undefined;
    if (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') return undefined;
    if (!this.d.launcherReady(podUid)) return 200;
    const fail = (why: string) =>
      this.d.write(
        vmi,
        this.withState(vmi, {
          ...ms,
          completed: true,
          failed: true,
          failureReason: why,
          endTimestamp: ms.endTimestamp ?? this.now(),
        }),
      );
    if (!this.d.migrationAddress && !this.d.proxy) {
      await fail(
        `virt-handler on node ${this.d.nodeName} has no migration address to offer the source (VirtHandlerOptions.migrationAddress)`,
      );
      return undefined;
    }
    const launcher = await this.d.launcher(podUid);
    if (!this.prepared.has(uid)) {
      const setupError = await this.d.prepareTargetPod?.(vmi, pod);
      if (setupError) {
        this.d.log(`${this.subject(vmi)}: migration target: ${setupError}`);
        return 2_000;
      }
      try {
        await launcher.syncMigrationTarget(vmi);
      } catch (e) {
        if (!permanent(e)) throw e;
        await fail(`target node ${this.d.nodeName}: ${(e as Error).message}`);
        return undefined;
      }
      this.prepared.add(uid);
    }
    // The XML before the address: once the source sees the address, the XML is there.
    await publishTargetDomainXml(this.d.client, pod, await this.d.readTargetXml(podUid));
    const domain = (await launcher.getDomain()) as LauncherDomain | undefined;
    const next: VirtualMachineInstanceMigrationState = { ...ms, targetNodeAddress: this.d.migrationAddress };
    if (this.d.proxy) {
      const vmiUid = vmi.metadata?.uid ?? '';
      const ports = await this.d.proxy.manager.startTarget(
        vmiUid,
        this.d.proxy.targetSockets(podUid, vmiUid, vmi.status?.migrationMethod === 'BlockMigration'),
        migrationDisablesTls(ms),
      );
      next.targetNodeAddress = this.d.proxy.address;
      next.targetDirectMigrationNodePorts = ports;
    }
    if (domain && !domain.finished) {
      next.targetNodeDomainDetected = true;
      if (ACTIVE_ON_TARGET(domain)) next.targetNodeDomainReadyTimestamp ??= this.now();
    }
    await this.d.write(vmi, this.withState(vmi, next));
    // The launcher's events wake us; the poll is a safety net while the guest is on its way.
    return next.targetNodeDomainReadyTimestamp ? undefined : 1_000;
  }

  private async cleanTarget(vmi: VirtualMachineInstance, uid: string, podUid: string): Promise<void> {
    if (this.cleaned.has(uid)) return;
    if (this.d.launcherReady(podUid)) {
      try {
        await (await this.d.launcher(podUid)).deleteVirtualMachine(vmi);
      } catch (e) {
        this.d.log(`${this.subject(vmi)}: cleaning the failed migration's target: ${(e as Error).message}`);
      }
    }
    await this.d.dropLauncher(podUid);
    await this.d.proxy?.manager.stopTarget(vmi.metadata?.uid ?? '');
    this.cleaned.add(uid);
    this.prepared.delete(uid);
  }

  // --- source ---

  /**
   * The source node's part, for the VMI's own launcher and what it reported (`domain`).
   * Starts the migration once the target is ready, cancels on request, copies the report
   * into `migrationState`, and on success hands the VMI over to the target node.
   */
  async syncSource(
    vmi: VirtualMachineInstance,
    domain: LauncherDomain | undefined,
    podUid: string,
  ): Promise<SourceStep> {
    const ms0 = vmi.status?.migrationState ?? {};
    const uid = ms0.migrationUid ?? '';
    const report = sourceReport(ms0, domain);
    let ms = withSourceReport(ms0, report);
    const apply = (next: VirtualMachineInstance) => {
      if (next.status) next.status.migrationState = ms;
      return next;
    };
    if (ms0.completed) return { handled: false, apply };
    const deleting = vmi.metadata?.deletionTimestamp !== undefined;

    // The guest left before the launcher's job settled (the domain's events come first):
    // not a guest that ended, so no normal status until the job's result is in.
    if (report && !report.endTimestamp && domain?.finished) return { handled: true, again: 200 };

    // Cancellation (the migration object was deleted: the controller set abortRequested).
    if (ms.abortRequested && !ms.endTimestamp) {
      if (report && !report.endTimestamp) {
        if (!report.abortStatus && !this.cancelled.has(uid)) {
          this.cancelled.add(uid);
          try {
            await (await this.d.launcher(podUid)).cancelVirtualMachineMigration(vmi);
          } catch (e) {
            this.d.log(`${this.subject(vmi)}: cancel migration: ${(e as Error).message}`);
          }
          return { handled: true, again: 200 };
        }
      } else if (!report && !ms.startTimestamp) {
        // Never started: nothing to abort but the plan.
        ms = {
          ...ms,
          abortStatus: 'Succeeded',
          completed: true,
          failed: true,
          failureReason: 'Live migration aborted',
          endTimestamp: this.now(),
        };
      }
      return { handled: false, apply };
    }

    // Start once the target advertises its address.
    const running = domain && !domain.finished && ['running', 'paused', 'blocked'].includes(domain.state);
    if (!report && ms.targetNodeAddress && !ms.startTimestamp && !ms.failed && !deleting && running) {
      const xml = await targetDomainXml(this.d.client, vmi, ms);
      if (xml === null) return { handled: true, again: 500 };
      try {
        const direct = migrationOptions(this.config(), ms, xml);
        const p = this.d.proxy;
        const options = p ? await proxiedOptions(p, vmi.metadata?.uid ?? '', ms, podUid, direct) : direct;
        await (await this.d.launcher(podUid)).migrateVirtualMachine(vmi, options);
      } catch (e) {
        if (!permanent(e)) throw e;
        ms = {
          ...ms,
          completed: true,
          failed: true,
          failureReason: (e as Error).message,
          endTimestamp: this.now(),
        };
        return { handled: false, apply };
      }
      // The launcher reports the job's start; its event brings us back.
      return { handled: true, again: 200 };
    }

    // The guest left: hand the VMI over once the target reports it running.
    if (report?.completed) {
      ms.endTimestamp ??= this.now();
      if (!ms.targetNode)
        return this.failVmi(vmi, ms, 'The VirtualMachineInstance migrated to unknown host.');
      if (ms.targetNodeDomainDetected && ms.targetNodeDomainReadyTimestamp) {
        await this.d.write(vmi, handedOver(vmi, ms));
        await this.releaseProxies(vmi);
        this.d.log(`${this.subject(vmi)}: migrated to node ${ms.targetNode}`);
        // Its launcher has nothing left to run: let it go now (upstream's does the same).
        try {
          await (await this.d.launcher(podUid)).deleteVirtualMachine(vmi);
        } catch (e) {
          this.d.log(`${this.subject(vmi)}: releasing the source launcher: ${(e as Error).message}`);
        }
        await this.d.dropLauncher(podUid);
        return { handled: true };
      }
      const waited = this.d.now().getTime() - new Date(ms.endTimestamp).getTime();
      if (waited > (this.d.targetReadyTimeoutMs ?? 60_000)) {
        return this.failVmi(
          vmi,
          ms,
          "The VirtualMachineInstance's domain was never observed on the target after the migration completed within the timeout period.",
        );
      }
      await this.d.write(vmi, this.withState(vmi, ms));
      return { handled: true, again: 1_000 };
    }
    return { handled: false, apply };
  }

  /** Stops this handler's proxies of the VMI's migration once it ended (either node's). */
  async releaseProxiesIfDone(vmi: VirtualMachineInstance): Promise<void> {
    const ms = vmi.status?.migrationState;
    if (!ms || ms.completed || ms.failed) await this.releaseProxies(vmi);
  }

  /** Stops this handler's proxies of the VMI's migration. */
  async releaseProxies(vmi: VirtualMachineInstance): Promise<void> {
    const uid = vmi.metadata?.uid ?? '';
    await this.d.proxy?.manager.stopSource(uid);
    await this.d.proxy?.manager.stopTarget(uid);
  }

  private async failVmi(
    vmi: VirtualMachineInstance,
    ms: VirtualMachineInstanceMigrationState,
    why: string,
  ): Promise<SourceStep> {
    const next = this.withState(vmi, { ...ms, completed: true, failed: true, failureReason: why });
    const st = next.status ?? {};
    st.phase = 'Failed';
    st.reason = why;
    st.phaseTransitionTimestamps = [
      ...(st.phaseTransitionTimestamps ?? []),
      { phase: 'Failed', phaseTransitionTimestamp: this.now() },
    ];
    await this.d.write(vmi, next);
    return { handled: true };
  }
}
