/**
 * Registration with the kubelet by the driver itself, as node-driver-registrar does: the
 * driver serves the kubelet's plugin-registration service (`pluginregistration.Registration`)
 * on `<kubelet root>/plugins_registry/<driver>-reg.sock`; the kubelet's plugin watcher finds
 * the socket, calls GetInfo (a CSIPlugin, its name, the CSI socket's path as the kubelet
 * sees it, the CSI versions) and NotifyRegistrationStatus. The kubelet then calls the CSI
 * socket's NodeGetInfo and records the driver in the node's CSINode object. A vanished
 * registration socket (a cleaned-up directory) is served again.
 */
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type handleUnaryCall, Server } from '@grpc/grpc-js';
import { bindUnixSocket } from '../common/grpc-unix';
import {
  type InfoRequest,
  type PluginInfo,
  RegistrationService,
  type RegistrationStatus,
  type RegistrationStatusResponse,
} from './generated-kubelet/pluginregistration/v1/api';

/** The kubelet's registration directory under its root (`--root-dir`, default /var/lib/kubelet). */
export const PLUGINS_REGISTRY = 'plugins_registry';
/** The plugin type the kubelet routes to its CSI handler. */
export const CSI_PLUGIN_TYPE = 'CSIPlugin';
/** The CSI versions the driver offers the kubelet (its CSI handler accepts 1.x). */
export const CSI_VERSIONS = ['1.0.0'];

/** Options of {@link KubeletRegistration}. */
export interface KubeletRegistrationOptions {
  /** The kubelet's registration directory, e.g. /var/lib/kubelet/plugins_registry. */
  registryDir: string;
  driverName: string;
  /** The CSI socket's path as the kubelet sees it (the host path). */
  csiEndpoint: string;
  /** How often the socket's presence is checked, ms (default 5000). */
  checkMs?: number;
  log?: (message: string) => void;
  /** Called with each call the kubelet makes. */
  trace?: (message: string) => void;
}

/** The kubelet's last word on the registration. */
export interface RegistrationState {
  /** undefined until the kubelet has called NotifyRegistrationStatus. */
  registered?: boolean;
  error?: string;
}

/** Serves the registration socket until stopped. */
export class KubeletRegistration {
  readonly socketPath: string;
  readonly state: RegistrationState = {};
  private server?: Server;
  private timer?: NodeJS.Timeout;
  private readonly log: (m: string) => void;

  constructor(private readonly o: KubeletRegistrationOptions) {
    this.socketPath = join(o.registryDir, `${o.driverName}-reg.sock`);
    this.log = o.log ?? (() => {});
  }

  /** Serves the socket and keeps it there. */
  async start(): Promise<void> {
    await this.serve();
    this.timer = setInterval(() => {
      if (!existsSync(this.socketPath))
        this.serve().catch((e) => this.log(`serving the registration socket again failed: ${e}`));
    }, this.o.checkMs ?? 5000);
    this.timer.unref();
  }

  /** Stops serving and removes the socket (the kubelet then deregisters the driver). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.shutdown();
    await rm(this.socketPath, { force: true });
  }

  private async shutdown(): Promise<void> {
    const s = this.server;
    this.server = undefined;
    if (s) await new Promise<void>((resolve) => s.tryShutdown(() => resolve()));
  }

  private async serve(): Promise<void> {
    await this.shutdown();
    await mkdir(this.o.registryDir, { recursive: true });
    await rm(this.socketPath, { force: true });
    const getInfo: handleUnaryCall<InfoRequest, PluginInfo> = (_call, cb) => {
      this.o.trace?.('pluginregistration.Registration/GetInfo');
      cb(null, {
        type: CSI_PLUGIN_TYPE,
        name: this.o.driverName,
        endpoint: this.o.csiEndpoint,
        supportedVersions: CSI_VERSIONS,
      });
    };
    const notify: handleUnaryCall<RegistrationStatus, RegistrationStatusResponse> = (call, cb) => {
      this.o.trace?.(
        `pluginregistration.Registration/NotifyRegistrationStatus: ${JSON.stringify(call.request)}`,
      );
      this.state.registered = call.request.pluginRegistered;
      this.state.error = call.request.error || undefined;
      this.log(
        call.request.pluginRegistered
          ? `registered with the kubelet (${this.socketPath})`
          : `the kubelet refused the registration: ${call.request.error}`,
      );
      cb(null, {});
    };
    const server = new Server();
    server.addService(RegistrationService, { getInfo, notifyRegistrationStatus: notify });
    await bindUnixSocket(server, this.socketPath);
    this.server = server;
  }
}
