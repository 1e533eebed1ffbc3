import { chmod, mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type handleUnaryCall, Server, status } from '@grpc/grpc-js';
import { bindUnixSocket, unixSocketServer } from '../common/grpc-unix';
import { type CmdInfoResponse, CmdInfoService } from './generated/kubevirt/cmd/info/info';
import {
  CmdService,
  type DomainResponse,
  type DomainStatsResponse,
  type EmptyRequest,
  type ExecRequest,
  type ExecResponse,
  type FreezeRequest,
  type GuestInfoResponse,
  type GuestPingRequest,
  type GuestPingResponse,
  type InjectLaunchSecretRequest,
  type LaunchMeasurementResponse,
  type MemoryDumpRequest,
  type MigrationRequest,
  type Response,
  type ScreenshotResponse,
  type SEVInfoResponse,
  type VMIRequest,
} from './generated/kubevirt/cmd/v1/cmd';
import { LAUNCHER_INIT_SOCKET, LAUNCHER_SOCKET } from './paths';
import { LauncherRpcError } from './rpc-error';

/** The protocol versions this launcher speaks (upstream negotiates the same way). */
export const SUPPORTED_CMD_VERSIONS = ['v1'];

/**
 * What a launcher implements, as promises. Each method resolves to the response message;
 * a thrown error becomes `{ success: false, message }` so the handler sees libvirt's or
 * the driver's message, as upstream's launcher reports failures; a thrown
 * `LauncherRpcError` becomes a gRPC status with its code.
 */
export interface LauncherService {
  syncVirtualMachine(req: VMIRequest): Promise<void>;
  pauseVirtualMachine(req: VMIRequest): Promise<void>;
  unpauseVirtualMachine(req: VMIRequest): Promise<void>;
  /** Freezes the guest's filesystems; thawed again after `unfreezeTimeoutSeconds` (0: never). */
  freezeVirtualMachine(req: FreezeRequest): Promise<void>;
  unfreezeVirtualMachine(req: VMIRequest): Promise<void>;
  resetVirtualMachine(req: VMIRequest): Promise<void>;
  softRebootVirtualMachine(req: VMIRequest): Promise<void>;
  shutdownVirtualMachine(req: VMIRequest): Promise<void>;
  killVirtualMachine(req: VMIRequest): Promise<void>;
  deleteVirtualMachine(req: VMIRequest): Promise<void>;
  migrateVirtualMachine(req: MigrationRequest): Promise<void>;
  syncMigrationTarget(req: VMIRequest): Promise<void>;
  cancelVirtualMachineMigration(req: VMIRequest): Promise<void>;
  /** CPU hotplug: enables the vCPUs of the VMI's spec topology on the running guest. */
  syncVirtualMachineCPUs(req: VMIRequest): Promise<void>;
  /** Memory hotplug: gives the running guest the VMI's memory.guest through virtio-mem. */
  syncVirtualMachineMemory(req: VMIRequest): Promise<void>;
  /** The domain as JSON, or undefined when there is none yet. */
  getDomain(): Promise<string | undefined>;
  getDomainStats(): Promise<string | undefined>;
  getGuestInfo(): Promise<string | undefined>;
  ping(): Promise<void>;
  getSevInfo(): Promise<Uint8Array>;
  getLaunchMeasurement(req: VMIRequest): Promise<Uint8Array>;
  injectLaunchSecret(req: InjectLaunchSecretRequest): Promise<void>;
  /** The guest display's picture. */
  getScreenshot(req: VMIRequest): Promise<{ mime: string; data: Uint8Array }>;
  /** Runs an exec probe's command in the guest (through its agent): exit code and stdout. */
  exec(req: ExecRequest): Promise<{ exitCode: number; stdout: string }>;
  /** A guestAgentPing probe: resolves when the guest agent answers. */
  guestPing(req: GuestPingRequest): Promise<void>;
  /** Starts a memory-only dump of the guest into `dumpPath`; resolves once started. */
  virtualMachineMemoryDump(req: MemoryDumpRequest): Promise<void>;
}

function failure(err: unknown): Response {
  return { success: false, message: err instanceof Error ? err.message : String(err) };
}

function unary<Req, Res>(fn: (req: Req) => Promise<Res>): handleUnaryCall<Req, Res> {
  return (call, callback) => {
    fn(call.request).then(
      (res) => callback(null, res),
      (err: unknown) =>
        callback(
          {
            code: err instanceof LauncherRpcError ? err.code : status.INTERNAL,
            message: err instanceof Error ? err.message : String(err),
          },
          null,
        ),
    );
  };
}

function command<Req>(fn: (req: Req) => Promise<void>): handleUnaryCall<Req, Response> {
  return unary(async (req: Req) => {
    try {
      await fn(req);
      return { success: true, message: '' };
    } catch (err) {
      if (err instanceof LauncherRpcError) throw err;
      return failure(err);
    }
  });
}

function withPayload<Req, Res>(
  fn: (req: Req) => Promise<Res>,
  wrap: (response: Response, payload?: Res) => unknown,
): handleUnaryCall<Req, never> {
  return unary(async (req: Req) => {
    try {
      return wrap({ success: true, message: '' }, await fn(req)) as never;
    } catch (err) {
      if (err instanceof LauncherRpcError) throw err;
      return wrap(failure(err)) as never;
    }
  });
}

/** A running launcher command server. */
export interface LauncherServer {
  /** The path clients connect to. */
  readonly socketPath: string;
  close(): Promise<void>;
}

/**
 * Serves `impl` on `<socketDir>/launcher-sock` with mode 0600. As upstream, it binds an
 * init socket first and renames it into place once serving, so a client that finds
 * `launcher-sock` always finds a ready server.
 */
export async function serveLauncher(socketDir: string, impl: LauncherService): Promise<LauncherServer> {
  await mkdir(socketDir, { recursive: true, mode: 0o700 });
  const initPath = join(socketDir, LAUNCHER_INIT_SOCKET);
  const socketPath = join(socketDir, LAUNCHER_SOCKET);
  await rm(initPath, { force: true });
  await rm(socketPath, { force: true });

  const server = new Server();
  server.addService(CmdService, {
    syncVirtualMachine: command((r: VMIRequest) => impl.syncVirtualMachine(r)),
    pauseVirtualMachine: command((r: VMIRequest) => impl.pauseVirtualMachine(r)),
    unpauseVirtualMachine: command((r: VMIRequest) => impl.unpauseVirtualMachine(r)),
    freezeVirtualMachine: command((r: FreezeRequest) => impl.freezeVirtualMachine(r)),
    unfreezeVirtualMachine: command((r: VMIRequest) => impl.unfreezeVirtualMachine(r)),
    resetVirtualMachine: command((r: VMIRequest) => impl.resetVirtualMachine(r)),
    softRebootVirtualMachine: command((r: VMIRequest) => impl.softRebootVirtualMachine(r)),
    shutdownVirtualMachine: command((r: VMIRequest) => impl.shutdownVirtualMachine(r)),
    killVirtualMachine: command((r: VMIRequest) => impl.killVirtualMachine(r)),
    deleteVirtualMachine: command((r: VMIRequest) => impl.deleteVirtualMachine(r)),
    migrateVirtualMachine: command((r: MigrationRequest) => impl.migrateVirtualMachine(r)),
    syncMigrationTarget: command((r: VMIRequest) => impl.syncMigrationTarget(r)),
    cancelVirtualMachineMigration: command((r: VMIRequest) => impl.cancelVirtualMachineMigration(r)),
    syncVirtualMachineCpUs: command((r: VMIRequest) => impl.syncVirtualMachineCPUs(r)),
    syncVirtualMachineMemory: command((r: VMIRequest) => impl.syncVirtualMachineMemory(r)),
    ping: command(() => impl.ping()),
    injectLaunchSecret: command((r: InjectLaunchSecretRequest) => impl.injectLaunchSecret(r)),
    virtualMachineMemoryDump: command((r: MemoryDumpRequest) => impl.virtualMachineMemoryDump(r)),
    getDomain: withPayload(
      (_: EmptyRequest) => impl.getDomain(),
      (response, domain): DomainResponse => ({ response, domain: domain ?? '' }),
    ),
    getDomainStats: withPayload(
      (_: EmptyRequest) => impl.getDomainStats(),
      (response, domainStats): DomainStatsResponse => ({ response, domainStats: domainStats ?? '' }),
    ),
    getGuestInfo: withPayload(
      (_: EmptyRequest) => impl.getGuestInfo(),
      (response, info): GuestInfoResponse => ({ response, guestInfoResponse: info ?? '' }),
    ),
    getSevInfo: withPayload(
      (_: EmptyRequest) => impl.getSevInfo(),
      (response, sevInfo): SEVInfoResponse => ({ response, sevInfo: Buffer.from(sevInfo ?? []) }),
    ),
    getScreenshot: withPayload(
      (r: VMIRequest) => impl.getScreenshot(r),
      (response, shot): ScreenshotResponse => ({
        response,
        mime: shot?.mime ?? '',
        data: Buffer.from(shot?.data ?? []),
      }),
    ),
    exec: withPayload(
      (r: ExecRequest) => impl.exec(r),
      (response, out): ExecResponse => ({
        response,
        exitCode: out?.exitCode ?? 0,
        stdOut: out?.stdout ?? '',
      }),
    ),
    guestPing: withPayload(
      (r: GuestPingRequest) => impl.guestPing(r),
      (response): GuestPingResponse => ({ response }),
    ),
    getLaunchMeasurement: withPayload(
      (r: VMIRequest) => impl.getLaunchMeasurement(r),
      (response, m): LaunchMeasurementResponse => ({ response, launchMeasurement: Buffer.from(m ?? []) }),
    ),
  });
  server.addService(CmdInfoService, {
    info: unary(
      async (): Promise<CmdInfoResponse> => ({
        supportedCmdVersions: SUPPORTED_CMD_VERSIONS,
        supportedKubeVirtAPIVersions: ['kubevirt.io/v1'],
        supportedDomainVersions: ['v1'],
        supportedDomainStatsVersions: ['v1'],
      }),
    ),
  });

  await bindUnixSocket(server, initPath);
  await chmod(initPath, 0o600);
  await rename(initPath, socketPath);
  return unixSocketServer(server, socketPath);
}
