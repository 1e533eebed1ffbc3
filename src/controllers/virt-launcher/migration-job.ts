/**
 * The source side of one live migration, as upstream's launcher runs it
 * (live-migration-source.go): the driver sends the guest while a monitor polls the job
 * and aborts it when the remaining data stops shrinking for `ProgressTimeout` seconds
 * or the whole migration exceeds `CompletionTimeoutPerGiB` seconds per GiB of guest
 * memory; with `AllowWorkloadDisruption` it pauses the guest at that point instead, so
 * the copy converges (libvirt resumes it on the target; a failed migration resumes it
 * here). The result (completed, failed and why, abort status) is kept as upstream's
 * migration metadata for the domain report.
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
    while (!this.settled) {
      await Promise.race([sleep(this.deps.pollMs), ended]);
      if (this.settled) return;
      const p = await this.deps
        .migration()
        .progress(this.deps.ref)
        .catch(() => undefined);
      if (this.settled) return;
      const now = Date.now();
      if (p) {
        this.state.dataTotal = p.dataTotal;
        this.state.dataProcessed = p.dataProcessed;
        this.state.dataRemaining = p.dataRemaining;
        if (p.dataRemaining < watermark) {
          watermark = p.dataRemaining;
          lastProgress = now;
        }
      }
      if (this.timeoutReason || this.state.abortStatus) continue;
      const stuckMs = now - lastProgress;
      if (this.plan.progressTimeoutSeconds > 0 && stuckMs > this.plan.progressTimeoutSeconds * 1000) {
        this.abortForTimeout(
          `Live migration stuck for ${Math.round(stuckMs / 1000)} sec and has been aborted`,
        );
      } else if (acceptableMs > 0 && now - started > acceptableMs && this.state.mode !== 'Paused') {
        if (this.plan.allowWorkloadDisruption) await this.pauseToConverge(acceptableMs);
        else
          this.abortForTimeout(
            `Live migration is not completed after ${Math.round(acceptableMs / 1000)} sec and has been aborted`,
          );
      }
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
