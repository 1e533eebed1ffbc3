import { credentials, Metadata, type ServiceError } from '@grpc/grpc-js';
import { CmdInfoClient, type CmdInfoResponse } from './generated/kubevirt/cmd/info/info';
import {
  CmdClient,
  type DomainResponse,
  type DomainStatsResponse,
  type ExecResponse,
  type FreezeRequest,
  type GuestInfoResponse,
  type GuestPingResponse,
  type InjectLaunchSecretRequest,
  type LaunchMeasurementResponse,
  type MemoryDumpRequest,
  type MigrationRequest,
  type Response,
  type ScreenshotResponse,
  type SEVInfoResponse,
  type VirtualMachineOptions,
  type VMIRequest,
} from './generated/kubevirt/cmd/v1/cmd';

/** A launcher reported failure (`success: false`): carries the launcher's message. */
export class LauncherCommandError extends Error {
  constructor(
    readonly rpc: string,
    message: string,
    /** The gRPC status code when the launcher answered with one (e.g. 12 UNIMPLEMENTED). */
    readonly code?: number,
  ) {
    super(`${rpc}: ${message}`);
    this.name = 'LauncherCommandError';
  }
}

/** Options of {@link LauncherClient}. */
export interface LauncherClientOptions {
  /** Per-call deadline in milliseconds (default 30 s; a sync of a booting domain can take a while). */
  timeoutMs?: number;
}

type Callback<T> = (err: ServiceError | null, res: T) => void;

const meta = () => new Metadata();

/**
 * The node agent's side of the launcher protocol: promise-based calls over the
 * launcher's unix socket. Every call has a deadline, so a wedged launcher surfaces as an
 * error instead of a hang.
 */
export class LauncherClient {
  private readonly cmd: CmdClient;
  private readonly info: CmdInfoClient;
  private readonly timeoutMs: number;

  constructor(
    readonly socketPath: string,
    opts: LauncherClientOptions = {},
  ) {
    this.timeoutMs = opts.timeoutMs ?? 30_000;
    const target = `unix:${socketPath}`;
    this.cmd = new CmdClient(target, credentials.createInsecure());
    this.info = new CmdInfoClient(target, credentials.createInsecure());
  }

  private call<T>(rpc: string, fn: (deadline: { deadline: Date }, cb: Callback<T>) => unknown): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      fn({ deadline: new Date(Date.now() + this.timeoutMs) }, (err, res) => {
        if (err) reject(new LauncherCommandError(rpc, err.details || err.message, err.code));
        else resolve(res);
      });
    });
  }

  private async command(rpc: string, fn: (o: { deadline: Date }, cb: Callback<Response>) => unknown) {
    const res = await this.call<Response>(rpc, fn);
    if (!res.success) throw new LauncherCommandError(rpc, res.message);
  }

  private static request(vmi: unknown, options?: VirtualMachineOptions): VMIRequest {
    return { vmi: { vmiJson: Buffer.from(JSON.stringify(vmi)) }, options };
  }

  /** Version negotiation: the command versions the launcher speaks. */
  getInfo(): Promise<CmdInfoResponse> {
    return this.call('Info', (o, cb) => this.info.info({}, meta(), o, cb));
  }

  syncVirtualMachine(vmi: unknown, options?: VirtualMachineOptions): Promise<void> {
    const req = LauncherClient.request(vmi, options);
    return this.command('SyncVirtualMachine', (o, cb) => this.cmd.syncVirtualMachine(req, meta(), o, cb));
  }
  pauseVirtualMachine(vmi: unknown): Promise<void> {
    const req = LauncherClient.request(vmi);
    return this.command('PauseVirtualMachine', (o, cb) => this.cmd.pauseVirtualMachine(req, meta(), o, cb));
  }
  unpauseVirtualMachine(vmi: unknown): Promise<void> {
    const req = LauncherClient.request(vmi);
    return this.command('UnpauseVirtualMachine', (o, cb) =>
      this.cmd.unpauseVirtualMachine(req, meta(), o, cb),
    );
  }
  /** Freezes the guest's filesystems; the launcher thaws them after `unfreezeTimeoutSeconds` (0: never). */
  freezeVirtualMachine(vmi: unknown, unfreezeTimeoutSeconds: number): Promise<void> {
    const req: FreezeRequest = { vmi: { vmiJson: Buffer.from(JSON.stringify(vmi)) }, unfreezeTimeoutSeconds };
    return this.command('FreezeVirtualMachine', (o, cb) => this.cmd.freezeVirtualMachine(req, meta(), o, cb));
  }
  unfreezeVirtualMachine(vmi: unknown): Promise<void> {
    const req = LauncherClient.request(vmi);
    return this.command('UnfreezeVirtualMachine', (o, cb) =>
      this.cmd.unfreezeVirtualMachine(req, meta(), o, cb),
    );
  }
  /**
   * Starts a memory-only core dump of the guest into `dumpPath` (a path in the launcher's
   * hotplug directory); answers once started, the domain report carries the progress.
   */
  virtualMachineMemoryDump(vmi: unknown, dumpPath: string): Promise<void> {
    const req: MemoryDumpRequest = { vmi: { vmiJson: Buffer.from(JSON.stringify(vmi)) }, dumpPath };
    return this.command('VirtualMachineMemoryDump', (o, cb) =>
      this.cmd.virtualMachineMemoryDump(req, meta(), o, cb),
    );
  }
  /** The guest display's picture (PNG from this project's launcher). */
  async getScreenshot(vmi: unknown): Promise<{ mime: string; data: Buffer }> {
    const req = LauncherClient.request(vmi);
    const res = await this.call<ScreenshotResponse>('GetScreenshot', (o, cb) =>
      this.cmd.getScreenshot(req, meta(), o, cb),
    );
    if (res.response && !res.response.success)
      throw new LauncherCommandError('GetScreenshot', res.response.message);
    return { mime: res.mime, data: Buffer.from(res.data) };
  }
  resetVirtualMachine(vmi: unknown): Promise<void> {
    const req = LauncherClient.request(vmi);
    return this.command('ResetVirtualMachine', (o, cb) => this.cmd.resetVirtualMachine(req, meta(), o, cb));
  }
  softRebootVirtualMachine(vmi: unknown): Promise<void> {
    const req = LauncherClient.request(vmi);
    return this.command('SoftRebootVirtualMachine', (o, cb) =>
      this.cmd.softRebootVirtualMachine(req, meta(), o, cb),
    );
  }
  /** ACPI shutdown; the launcher kills the domain when the grace period runs out. */
  shutdownVirtualMachine(vmi: unknown, gracePeriodSeconds?: number): Promise<void> {
    const req = LauncherClient.request(vmi, {
      gracePeriodSeconds: gracePeriodSeconds ?? 0,
      memBalloonStatsPeriod: 0,
      clusterConfigJson: Buffer.alloc(0),
    });
    return this.command('ShutdownVirtualMachine', (o, cb) =>
      this.cmd.shutdownVirtualMachine(req, meta(), o, cb),
    );
  }
  killVirtualMachine(vmi: unknown): Promise<void> {
    const req = LauncherClient.request(vmi);
    return this.command('KillVirtualMachine', (o, cb) => this.cmd.killVirtualMachine(req, meta(), o, cb));
  }
  deleteVirtualMachine(vmi: unknown): Promise<void> {
    const req = LauncherClient.request(vmi);
    return this.command('DeleteVirtualMachine', (o, cb) => this.cmd.deleteVirtualMachine(req, meta(), o, cb));
  }
  migrateVirtualMachine(vmi: unknown, options: unknown): Promise<void> {
    const req: MigrationRequest = {
      vmi: { vmiJson: Buffer.from(JSON.stringify(vmi)) },
      options: Buffer.from(JSON.stringify(options)),
    };
    return this.command('MigrateVirtualMachine', (o, cb) =>
      this.cmd.migrateVirtualMachine(req, meta(), o, cb),
    );
  }
  syncMigrationTarget(vmi: unknown): Promise<void> {
    const req = LauncherClient.request(vmi);
    return this.command('SyncMigrationTarget', (o, cb) => this.cmd.syncMigrationTarget(req, meta(), o, cb));
  }
  cancelVirtualMachineMigration(vmi: unknown): Promise<void> {
    const req = LauncherClient.request(vmi);
    return this.command('CancelVirtualMachineMigration', (o, cb) =>
      this.cmd.cancelVirtualMachineMigration(req, meta(), o, cb),
    );
  }
  /** CPU hotplug: the running guest gets the vCPUs of the VMI's spec topology. */
  syncVirtualMachineCPUs(vmi: unknown): Promise<void> {
    const req = LauncherClient.request(vmi);
    return this.command('SyncVirtualMachineCPUs', (o, cb) =>
      this.cmd.syncVirtualMachineCpUs(req, meta(), o, cb),
    );
  }
  /** Memory hotplug: the running guest gets the VMI's `memory.guest` through virtio-mem. */
  syncVirtualMachineMemory(vmi: unknown): Promise<void> {
    const req = LauncherClient.request(vmi);
    return this.command('SyncVirtualMachineMemory', (o, cb) =>
      this.cmd.syncVirtualMachineMemory(req, meta(), o, cb),
    );
  }
  ping(): Promise<void> {
    return this.command('Ping', (o, cb) => this.cmd.ping({}, meta(), o, cb));
  }
  /** The launcher's domain as JSON, or undefined when it has none. */
  async getDomain(): Promise<unknown | undefined> {
    const res = await this.call<DomainResponse>('GetDomain', (o, cb) =>
      this.cmd.getDomain({}, meta(), o, cb),
    );
    if (res.response && !res.response.success)
      throw new LauncherCommandError('GetDomain', res.response.message);
    return res.domain ? JSON.parse(res.domain) : undefined;
  }
  async getDomainStats(): Promise<unknown | undefined> {
    const res = await this.call<DomainStatsResponse>('GetDomainStats', (o, cb) =>
      this.cmd.getDomainStats({}, meta(), o, cb),
    );
    if (res.response && !res.response.success) {
      throw new LauncherCommandError('GetDomainStats', res.response.message);
    }
    return res.domainStats ? JSON.parse(res.domainStats) : undefined;
  }
  async getGuestInfo(): Promise<unknown | undefined> {
    const res = await this.call<GuestInfoResponse>('GetGuestInfo', (o, cb) =>
      this.cmd.getGuestInfo({}, meta(), o, cb),
    );
    if (res.response && !res.response.success)
      throw new LauncherCommandError('GetGuestInfo', res.response.message);
    return res.guestInfoResponse ? JSON.parse(res.guestInfoResponse) : undefined;
  }
  async getSevInfo(): Promise<Uint8Array> {
    const res = await this.call<SEVInfoResponse>('GetSEVInfo', (o, cb) =>
      this.cmd.getSevInfo({}, meta(), o, cb),
    );
    if (res.response && !res.response.success)
      throw new LauncherCommandError('GetSEVInfo', res.response.message);
    return res.sevInfo;
  }
  async getLaunchMeasurement(vmi: unknown): Promise<Uint8Array> {
    const req = LauncherClient.request(vmi);
    const res = await this.call<LaunchMeasurementResponse>('GetLaunchMeasurement', (o, cb) =>
      this.cmd.getLaunchMeasurement(req, meta(), o, cb),
    );
    if (res.response && !res.response.success) {
      throw new LauncherCommandError('GetLaunchMeasurement', res.response.message);
    }
    return res.launchMeasurement;
  }
  injectLaunchSecret(vmi: unknown, options: unknown): Promise<void> {
    const req: InjectLaunchSecretRequest = {
      vmi: { vmiJson: Buffer.from(JSON.stringify(vmi)) },
      options: Buffer.from(JSON.stringify(options)),
    };
    return this.command('InjectLaunchSecret', (o, cb) => this.cmd.injectLaunchSecret(req, meta(), o, cb));
  }
  /** Runs `command args` in the guest through its agent (virt-probe's exec probe). */
  async exec(
    domainName: string,
    command: string,
    args: string[],
    timeoutSeconds: number,
  ): Promise<{ exitCode: number; stdout: string }> {
    const req = { domainName, Command: command, Args: args, timeoutSeconds };
    const res = await this.call<ExecResponse>('Exec', (o, cb) => this.cmd.exec(req, meta(), o, cb));
    if (res.response && !res.response.success) throw new LauncherCommandError('Exec', res.response.message);
    return { exitCode: res.exitCode, stdout: res.stdOut };
  }
  /** Resolves when the guest agent answers guest-ping (virt-probe's guestAgentPing probe). */
  async guestPing(domainName: string, timeoutSeconds: number): Promise<void> {
    const res = await this.call<GuestPingResponse>('GuestPing', (o, cb) =>
      this.cmd.guestPing({ domainName, timeoutSeconds }, meta(), o, cb),
    );
    if (res.response && !res.response.success)
      throw new LauncherCommandError('GuestPing', res.response.message);
  }

  close(): void {
    this.cmd.close();
    this.info.close();
  }
}
