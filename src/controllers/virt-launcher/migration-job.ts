/**
 * The source side of one live migration, as upstream's launcher runs it
 * (live-migration-source.go): the driver sends the guest while a monitor polls the job
 * and aborts it when the remaining data stops shrinking for `ProgressTimeout` seconds
 * or the whole migration exceeds `CompletionTimeoutPerGiB` seconds per GiB of guest
 * memory; with `AllowWorkloadDisruption` it switches to post-copy at that point (with
 * `AllowPostCopy`: the guest runs on the target from then on and fetches the rest of its
 * memory there) or pauses the guest, so the copy converges (libvirt resumes it on the
 * target; a failed migration resumes it here), as upstream's legacy convergence. Once in
 * post-copy nothing is aborted (the guest's state is on both sides). `MaxDowntimeMs` is
 * given to libvirt (virDomainMigrateSetMaxDowntime) as soon as the job runs. The result
 * (completed, failed and why, abort status, mode) is kept as upstream's migration
 * metadata for the domain report.
 */
import { status } from '@grpc/grpc-js';
import type { DomainRef, MigrationSupport } from '../../drivers/driver';
import { isDriverError } from '../../drivers/errors';
import type { LauncherMigrationState } from '../launcher-protocol/domain-report';
import type { MigrationPlan } from '../launcher-protocol/migration-options';
import { LauncherRpcError } from '../launcher-protocol/rpc-error';
import { driverRpcError } from './driver-rpc-error';

/** What a {@link SourceMigration} needs from its launcher. */
export interface SourceMigrationDeps {
  ref: DomainRef;
  /** `VirtualMachineInstance <ns>/<name>`, for messages. */
  subject: string;
  /** The current driver's migration support (the driver may be rebuilt after a reconnect). */
  migration: () => MigrationSupport;
  /** Pauses / resumes the guest (the current driver's `pause` / `unpause`). */
  pause: () => Promise<void>;
  unpause: () => Promise<void>;
  /** Guest memory in bytes (sizes the completion timeout). */
  guestMemoryBytes: number;
  /** How often to look at the job, ms (upstream: 400). */
  pollMs: number;
  /** Called whenever `state` changed. */
  onChange: () => void;
  log: (message: string) => void;
}

const GiB = 1024 ** 3;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** One outgoing migration. `start()` it; `done` settles when it ended either way. */
export class SourceMigration {
  readonly state: LauncherMigrationState;
  /** Resolves once the migration has ended (see `state` for how). */
  readonly done: Promise<void>;
  private resolveDone!: () => void;
  private settled = false;
  /** Why the monitor aborted the job, when it did. */
  private timeoutReason: string | undefined;
  /** libvirt took the plan's max downtime. */
  private maxDowntimeSet = false;

  constructor(
    private readonly plan: MigrationPlan,
    private readonly deps: SourceMigrationDeps,
  ) {
    this.state = {
      uid: plan.uid,
      role: 'source',
      startTimestamp: new Date().toISOString(),
      mode: 'PreCopy',
      targetUri: plan.targetUri,
    };
    this.done = new Promise((r) => {
      this.resolveDone = r;
    });
  }

  /** True until the migration has ended. */
  get running(): boolean {
    return !this.state.endTimestamp;
  }

  /** Starts the migration and its monitor in the background. */
  start(): void {
    const migrating = this.deps
      .migration()
      .migrateSource(this.deps.ref, this.plan.targetUri, this.plan.targetXml, this.plan.driver);
    void migrating.then(
      () => this.finish(undefined),
      (e: unknown) => this.finish(e),
    );
    void this.monitor(migrating);
  }

  /**
   * Aborts the job on the user's request (CancelVirtualMachineMigration). The guest keeps
   * running here; `state.abortStatus` goes Aborting, then Succeeded or Failed.
   */
  async cancel(): Promise<void> {
    if (!this.running) {
      throw new LauncherRpcError(
        status.FAILED_PRECONDITION,
        `${this.deps.subject}: failed to cancel migration - vmi is not migrating`,
      );
    }
    if (this.state.abortStatus === 'Aborting') return;
    this.state.abortStatus = 'Aborting';
    this.deps.onChange();
    // The driver's job may not have begun yet right after MigrateVirtualMachine: retry a
    // few polls while the driver says there is no job and the migration still runs.
    for (let attempt = 0; ; attempt++) {
      try {
        await this.deps.migration().cancel(this.deps.ref);
        return;
      } catch (e) {
        if (this.settled) return;
        if (isDriverError(e, 'InvalidState') && attempt < 25) {
          await sleep(this.deps.pollMs);
          continue;
        }
        this.state.abortStatus = 'Failed';
        this.deps.onChange();
        throw driverRpcError(e, this.deps.subject, 'failed to abort live migration');
      }
    }
  }

  private async monitor(migrating: Promise<void>): Promise<void> {
    const started = Date.now();
    let lastProgress = started;
    let watermark = Number.POSITIVE_INFINITY;
    const acceptableMs =
      this.plan.completionTimeoutPerGiB * Math.max(1, Math.ceil(this.deps.guestMemoryBytes / GiB)) * 1000;
    const ended = migrating.then(
      () => true,
      () => true,
    );
    let downtimeTries = this.plan.maxDowntimeMs ? 3 : 0;
    while (!this.settled) {
      await Promise.race([sleep(this.deps.pollMs), ended]);
      if (this.settled) return;
      const p = await this.deps
        .migration()
        .progress(this.deps.ref)
        .catch(() => undefined);
      if (this.settled) return;
      const now = Date.now();
      if (p && downtimeTries > 0) {
        // Only a running job takes it (libvirt: "no job is active" before).
        downtimeTries--;
        await this.setMaxDowntime(downtimeTries === 0);
        if (this.maxDowntimeSet) downtimeTries = 0;
      }
      if (p) {
        this.state.dataTotal = p.dataTotal;
        this.state.dataProcessed = p.dataProcessed;
        this.state.dataRemaining = p.dataRemaining;
        if (p.dataRemaining < watermark) {
          watermark = p.dataRemaining;
          lastProgress = now;
        }
      }
      // In post-copy the guest runs on the target: aborting now would lose it (upstream tracks nothing then).
      if (this.timeoutReason || this.state.abortStatus || this.state.mode === 'PostCopy') continue;
      const stuckMs = now - lastProgress;
      if (this.plan.progressTimeoutSeconds > 0 && stuckMs > this.plan.progressTimeoutSeconds * 1000) {
        this.abortForTimeout(
          `Live migration stuck for ${Math.round(stuckMs / 1000)} sec and has been aborted`,
        );
      } else if (acceptableMs > 0 && now - started > acceptableMs && this.state.mode !== 'Paused') {
        if (this.plan.allowWorkloadDisruption && this.plan.driver.allowPostCopy)
          await this.postCopyToConverge(acceptableMs);
        else if (this.plan.allowWorkloadDisruption) await this.pauseToConverge(acceptableMs);
        else
          this.abortForTimeout(
            `Live migration is not completed after ${Math.round(acceptableMs / 1000)} sec and has been aborted`,
          );
      }
    }
  }

  private async setMaxDowntime(last: boolean): Promise<void> {
    const ms = this.plan.maxDowntimeMs ?? 0;
    try {
      await this.deps.migration().setMaxDowntime(this.deps.ref, ms);
      this.maxDowntimeSet = true;
      this.deps.log(`migration max downtime set to ${ms} ms`);
    } catch (e) {
      if (last)
        this.deps.log(`setting the migration max downtime to ${ms} ms failed: ${(e as Error).message}`);
    }
  }

  /**
   * upstream's post-copy switch at the completion timeout: the guest continues on the
   * target at once and pulls what memory is left. If libvirt refuses, the guest is paused
   * instead (the other way to converge).
   */
  private async postCopyToConverge(acceptableMs: number): Promise<void> {
    const after = Math.round(acceptableMs / 1000);
    try {
      await this.deps.migration().startPostCopy(this.deps.ref);
      this.state.mode = 'PostCopy';
      this.deps.log(`live migration not completed after ${after} sec: switched to post-copy`);
      this.deps.onChange();
    } catch (e) {
      this.deps.log(
        `live migration not completed after ${after} sec: post-copy failed to start: ${(e as Error).message}`,
      );
      await this.pauseToConverge(acceptableMs);
    }
  }

  /** Upstream's paused migration: the guest stops dirtying memory, so the copy finishes. */
  private async pauseToConverge(acceptableMs: number): Promise<void> {
    try {
      await this.deps.pause();
      this.state.mode = 'Paused';
      this.deps.log(
        `live migration not completed after ${Math.round(acceptableMs / 1000)} sec: guest paused so it converges`,
      );
      this.deps.onChange();
    } catch (e) {
      this.abortForTimeout(
        `Live migration is not completed after ${Math.round(acceptableMs / 1000)} sec and pausing the guest failed (${(e as Error).message}); it has been aborted`,
      );
    }
  }

  private abortForTimeout(reason: string): void {
    this.timeoutReason = reason;
    this.deps.log(reason);
    this.deps
      .migration()
      .cancel(this.deps.ref)
      .catch((e: unknown) => this.deps.log(`aborting the migration: ${(e as Error).message}`));
  }

  private finish(err: unknown): void {
    this.settled = true;
    const s = this.state;
    if (err === undefined) {
      s.completed = true;
      // The guest arrived although an abort was asked for: the abort failed.
      if (s.abortStatus === 'Aborting') s.abortStatus = 'Failed';
      this.deps.log(`migrated to ${this.plan.targetUri}`);
    } else {
      s.failed = true;
      const why = err instanceof Error ? err.message : String(err);
      if (s.abortStatus === 'Aborting') {
        s.abortStatus = 'Succeeded';
        s.failureReason = 'Live migration aborted';
      } else {
        s.failureReason = this.timeoutReason ?? `Live migration failed: ${why}`;
      }
      this.deps.log(`migration failed: ${why}`);
      // The guest was paused only to help the migration: it runs on here.
      if (s.mode === 'Paused') {
        this.deps
          .unpause()
          .catch((e: unknown) =>
            this.deps.log(`resuming after the failed migration: ${(e as Error).message}`),
          );
      }
    }
    s.endTimestamp = new Date().toISOString();
    this.deps.onChange();
    this.resolveDone();
  }
}
