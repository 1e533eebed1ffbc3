/**
 * The launcher's migration RPCs (upstream's MigrateVirtualMachine, SyncMigrationTarget,
 * CancelVirtualMachineMigration) and the migration part of its domain report: the
 * outgoing job when this launcher is the source, the incoming state when it is the target.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { status } from '@grpc/grpc-js';
import type { VirtualMachineInstance } from '../../api';
import { quantityValue } from '../../api/config/quantity';
import type { DomainInfo, DomainRef, HypervisorDriver, SyncOptions } from '../../drivers/driver';
import {
  LauncherRpcError,
  MIGRATION_TARGET_XML,
  type MigrationRequest,
  type VMIRequest,
} from '../launcher-protocol';
import type { LauncherDomain, LauncherMigrationState } from '../launcher-protocol/domain-report';
import { parseMigrationRequest } from '../launcher-protocol/migration-options';
import { driverRpcError } from './driver-rpc-error';
import { SourceMigration } from './migration-job';

/** The domain states a migration can start from. */
const ACTIVE = new Set(['running', 'blocked', 'paused', 'pmsuspended', 'shutdown']);

/**
 * The VMI with the vCPUs and memory its running guest has: during a CPU or memory hotplug
 * the spec already asks for more than `status.currentCPUTopology` and
 * `status.memory.guestRequested`, but the incoming guest keeps the source's (a migration
 * cannot change them); the handler adds the rest once it arrived.
 */
export function withCurrentCpus(vmi: VirtualMachineInstance): VirtualMachineInstance {
  let out = vmi;
  const current = vmi.status?.currentCPUTopology?.sockets;
  const cpu = vmi.spec?.domain?.cpu;
  if (cpu && current && (cpu.sockets ?? 1) !== current)
    out = {
      ...out,
      spec: { ...out.spec, domain: { ...out.spec.domain, cpu: { ...cpu, sockets: current } } },
    };
  const requested = vmi.status?.memory?.guestRequested;
  const memory = vmi.spec?.domain?.memory;
  if (
    memory?.guest !== undefined &&
    requested !== undefined &&
    quantityValue(memory.guest) !== quantityValue(requested)
  )
    out = {
      ...out,
      spec: { ...out.spec, domain: { ...out.spec.domain, memory: { ...memory, guest: requested } } },
    };
  return out;
}

/** What the migration RPCs need of their launcher. */
export interface MigrationHost {
  ref: DomainRef;
  subject: string;
  socketDir: string;
  driver(): HypervisorDriver;
  parseVmi(req: Pick<VMIRequest, 'vmi'>): VirtualMachineInstance;
  prepareVolumes?: (vmi: VirtualMachineInstance) => Promise<void>;
  /** Network phase 2 (the cached MACs, the guest's DHCP server), as before a start. */
  prepareNetwork?: (vmi: VirtualMachineInstance) => Promise<VirtualMachineInstance>;
  syncOptions(): SyncOptions;
  pollMs: number;
  refresh(): Promise<void>;
  log(message: string): void;
}

/** One launcher's migrations. */
export class LauncherMigrations {
  /** The outgoing migration (this launcher is the source). */
  private outgoing: SourceMigration | undefined;
  /** The incoming migration (this launcher is the target). */
  incoming: LauncherMigrationState | undefined;
  /** The domain XML prepared for the incoming guest. */
  private incomingXml: string | undefined;

  constructor(private readonly d: MigrationHost) {}

  /** The migration part of the report; a source whose guest left reports reason `migrated`. */
  report(d: DomainInfo | undefined): Partial<LauncherDomain> {
    const migration = this.outgoing?.state ?? this.incoming;
    if (!migration) return {};
    const left = !d && migration.role === 'source' && migration.completed;
    return left ? { migration: { ...migration }, reason: 'migrated' } : { migration: { ...migration } };
  }

  /** The domain XML a migration target prepared (SyncMigrationTarget), if any. */
  get preparedXml(): string | undefined {
    return this.incomingXml;
  }

  /**
   * True while `info` is an incoming guest that has not arrived: a migration target sees the
   * incoming domain (paused) come and, when the migration fails, go; neither is this guest
   * running or ending here.
   */
  receiving(info: DomainInfo | undefined): boolean {
    return !!this.incoming && !this.incoming.endTimestamp && info?.state !== 'running';
  }

  /**
   * True while an outgoing migration runs or once it succeeded: the guest is the
   * migration's, then the target's, and a sync must not define it here again.
   */
  get sending(): boolean {
    const s = this.outgoing?.state;
    return !!s && (!s.endTimestamp || !s.failed);
  }

  /** The incoming guest runs here: the migration is over for this (target) side. */
  arrived(): void {
    if (this.incoming && !this.incoming.endTimestamp) {
      this.incoming.completed = true;
      this.incoming.endTimestamp = new Date().toISOString();
    }
  }

  private requireMigration() {
    const m = this.d.driver().migration;
    if (!m) {
      throw new LauncherRpcError(
        status.UNIMPLEMENTED,
        `${this.d.subject}: live migration is not available: the ${this.d.driver().name} driver cannot migrate`,
      );
    }
    return m;
  }

  /**
   * Source side: starts sending the guest to the target and returns at once (as
   * upstream); progress and the result appear in the domain report's `migration`.
   */
  async migrate(req: MigrationRequest): Promise<void> {
    const vmi = this.d.parseVmi(req);
    this.requireMigration();
    const plan = parseMigrationRequest(req.options, vmi, this.d.subject);
    const current = this.outgoing;
    if (current?.state.uid === plan.uid) {
      if (current.running) return; // the handler asked again: it is under way
      throw new LauncherRpcError(
        status.FAILED_PRECONDITION,
        `${this.d.subject}: migration job ${plan.uid} already executed, finished at ${current.state.endTimestamp}, failed: ${!!current.state.failed}, abortStatus: ${current.state.abortStatus ?? ''}`,
      );
    }
    if (current?.running) {
      throw new LauncherRpcError(
        status.FAILED_PRECONDITION,
        `${this.d.subject}: migration ${current.state.uid} is still running`,
      );
    }
    const d = await this.d.driver().getDomain(this.d.ref);
    if (!d || !ACTIVE.has(d.state)) {
      throw new LauncherRpcError(
        status.FAILED_PRECONDITION,
        `${this.d.subject}: cannot migrate, the domain is ${d ? d.state : 'not defined'}`,
      );
    }
    this.outgoing = new SourceMigration(plan, {
      ref: this.d.ref,
      subject: this.d.subject,
      migration: () => this.requireMigration(),
      pause: () => this.d.driver().pause(this.d.ref),
      unpause: () => this.d.driver().unpause(this.d.ref),
      guestMemoryBytes: d.memoryKiB * 1024,
      pollMs: this.d.pollMs,
      onChange: () => void this.d.refresh(),
      log: this.d.log,
    });
    this.outgoing.start();
    await this.d.refresh();
  }

  /**
   * Target side: renders the domain for this pod's paths and prepares the host for it
   * (upstream's PrepareMigrationTarget). The XML is kept for the source (see
   * `MigrationRequestOptions.TargetDomainXML`) and written to {@link MIGRATION_TARGET_XML}.
   */
  async prepareTarget(req: VMIRequest): Promise<void> {
    const parsed = withCurrentCpus(this.d.parseVmi(req));
    const migration = this.requireMigration();
    const uid = parsed.status?.migrationState?.migrationUid;
    if (!uid) {
      throw new LauncherRpcError(
        status.INVALID_ARGUMENT,
        `${this.d.subject}: status.migrationState.migrationUid: required to prepare a migration target`,
      );
    }
    if (this.incoming?.uid === uid && this.incomingXml) return;
    // upstream's prepareMigrationTarget runs network phase 2 too: the guest keeps its lease.
    const vmi = this.d.prepareNetwork ? await this.d.prepareNetwork(parsed) : parsed;
    await this.d.prepareVolumes?.(vmi);
    try {
      this.incomingXml = await migration.prepareTarget(vmi, this.d.syncOptions());
    } catch (e) {
      throw driverRpcError(e, this.d.subject, 'failed to prepare migration target pod');
    }
    await writeFile(join(this.d.socketDir, MIGRATION_TARGET_XML), this.incomingXml, { mode: 0o600 });
    this.incoming = { uid, role: 'target', startTimestamp: new Date().toISOString(), mode: 'PreCopy' };
    this.d.log(`prepared as the target of migration ${uid}`);
  }

  /** Source side: aborts the running migration; the guest keeps running here. */
  async cancel(req: VMIRequest): Promise<void> {
    this.d.parseVmi(req);
    this.requireMigration();
    if (!this.outgoing) {
      throw new LauncherRpcError(
        status.FAILED_PRECONDITION,
        `${this.d.subject}: failed to cancel migration - vmi is not migrating`,
      );
    }
    await this.outgoing.cancel();
  }
}
