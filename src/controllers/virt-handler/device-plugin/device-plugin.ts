/**
 * One kubelet device plugin (the kubelet's device-plugin API v1beta1) for a host device
 * that many pods share, as upstream's GenericDevicePlugin serves /dev/kvm, /dev/net/tun
 * and /dev/vhost-net: it advertises `count` interchangeable devices of the extended
 * resource (e.g. 1000 `devices.kubevirt.io/kvm`), all healthy while the device node
 * exists, and answers Allocate with that device node for the container, so launcher
 * pods need no privilege to get /dev/kvm. It serves DevicePlugin on
 * `<pluginDir>/<endpoint>` and registers with the kubelet's Registration service on
 * `<pluginDir>/kubelet.sock`. The kubelet removes every socket in the directory when it
 * starts, so a vanished socket means a restarted kubelet: the plugin serves and
 * registers again.
 */
import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { credentials, Metadata, Server, type ServerWritableStream } from '@grpc/grpc-js';
import { bindUnixSocket } from '../../common/grpc-unix';
import {
  type AllocateRequest,
  type AllocateResponse,
  type Device,
  type DevicePluginOptions,
  DevicePluginService,
  type Empty,
  type ListAndWatchResponse,
  RegistrationClient,
} from './generated/deviceplugin/v1beta1/api';

/** The kubelet's device-plugin directory (hardcoded in the kubelet, whatever --root-dir is). */
export const DEVICE_PLUGIN_DIR = '/var/lib/kubelet/device-plugins';
/** The kubelet's registration socket in that directory. */
export const KUBELET_SOCKET = 'kubelet.sock';
/** The API version this plugin speaks. */
export const DEVICE_PLUGIN_VERSION = 'v1beta1';

/** A shared host device offered as an extended resource. */
export interface SharedDevice {
  /** Extended resource name, e.g. `devices.kubevirt.io/kvm`. */
  resourceName: string;
  /** The device node on the host (and in the container), e.g. `/dev/kvm`. */
  devicePath: string;
  /** How many pods may hold it at once (upstream: 1000 for kvm, tun, vhost-net). */
  count: number;
  /** cgroup permissions of the device node in the container (default `rw`). */
  permissions?: string;
}

/** Options of {@link DevicePlugin}. */
export interface DevicePluginOptions_ {
  device: SharedDevice;
  /** Default {@link DEVICE_PLUGIN_DIR}. */
  pluginDir?: string;
  /** How often the device node and the plugin's socket are looked at, ms (default 2000). */
  checkMs?: number;
  /** Where the device node is looked for (default: its path; tests point elsewhere). */
  hostPath?: string;
  log?: (message: string) => void;
}

const NAME = /^[a-z0-9.-]+\/[a-z0-9][a-z0-9-]{0,62}$/;

/** Serves and registers one device plugin; `start()`, `stop()`. */
export class DevicePlugin {
  readonly endpoint: string;
  private server: Server | undefined;
  private readonly streams = new Set<ServerWritableStream<Empty, ListAndWatchResponse>>();
  private healthy = false;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly dir: string;
  private readonly log: (m: string) => void;

  constructor(private readonly o: DevicePluginOptions_) {
    const { resourceName, count, devicePath } = o.device;
    if (!NAME.test(resourceName))
      throw new Error(`device plugin: ${JSON.stringify(resourceName)} is not a resource name`);
    if (!Number.isInteger(count) || count < 0 || count > 100_000)
      throw new Error(`device plugin ${resourceName}: count ${count} is not a whole number from 0 to 100000`);
    if (!devicePath.startsWith('/dev/'))
      throw new Error(`device plugin ${resourceName}: ${devicePath} is not under /dev`);
    this.endpoint = `kubevirt-${resourceName.split('/')[1]}.sock`;
    this.dir = o.pluginDir ?? DEVICE_PLUGIN_DIR;
    this.log = o.log ?? ((m) => process.stderr.write(`device plugin ${resourceName}: ${m}\n`));
  }

  /** The socket this plugin serves on. */
  get socketPath(): string {
    return join(this.dir, this.endpoint);
  }

  /** The devices as ListAndWatch sends them: `count` of them, healthy while the device node exists. */
  devices(): Device[] {
    const health = this.healthy ? 'Healthy' : 'Unhealthy';
    const base = this.o.device.resourceName.split('/')[1];
    return Array.from({ length: this.o.device.count }, (_, i) => ({ ID: `${base}${i}`, health }));
  }

  /** Serves, registers with the kubelet, then keeps both current. */
  async start(): Promise<void> {
    this.healthy = this.deviceExists();
    await this.serveAndRegister();
    this.timer = setInterval(() => void this.check(), this.o.checkMs ?? 2_000);
    this.timer.unref?.();
  }

  private deviceExists(): boolean {
    return existsSync(this.o.hostPath ?? this.o.device.devicePath);
  }

  private async check(): Promise<void> {
    if (this.stopped) return;
    const now = this.deviceExists();
    if (now !== this.healthy) {
      this.healthy = now;
      this.log(`${this.o.device.devicePath} ${now ? 'appeared' : 'vanished'}`);
      this.broadcast();
    }
    if (!existsSync(this.socketPath)) {
      // The kubelet restarted (it clears the directory): serve and register again.
      this.log('socket removed (kubelet restart): registering again');
      await this.serveAndRegister().catch((e) => this.log(`re-registration: ${(e as Error).message}`));
    }
  }

  private broadcast(): void {
    const msg = { devices: this.devices() };
    for (const s of this.streams) s.write(msg);
  }

  private async serveAndRegister(): Promise<void> {
    await this.closeServer();
    await mkdir(this.dir, { recursive: true });
    await rm(this.socketPath, { force: true });
    const server = new Server();
    server.addService(DevicePluginService, {
      getDevicePluginOptions: (_call: unknown, cb: (e: null, r: DevicePluginOptions) => void) =>
        cb(null, { preStartRequired: false, getPreferredAllocationAvailable: false }),
      listAndWatch: (call: ServerWritableStream<Empty, ListAndWatchResponse>) => {
        this.streams.add(call);
        call.on('cancelled', () => this.streams.delete(call));
        call.on('close', () => this.streams.delete(call));
        call.write({ devices: this.devices() });
      },
      getPreferredAllocation: (_call: unknown, cb: (e: null, r: { containerResponses: [] }) => void) =>
        cb(null, { containerResponses: [] }),
      allocate: (call: { request: AllocateRequest }, cb: (e: Error | null, r?: AllocateResponse) => void) => {
        try {
          cb(null, this.allocate(call.request));
        } catch (e) {
          cb(e as Error);
        }
      },
      preStartContainer: (_call: unknown, cb: (e: null, r: object) => void) => cb(null, {}),
    });
    await bindUnixSocket(server, this.socketPath);
    this.server = server;
    await this.register();
  }

  /** Allocate: the device node for each container, whatever device IDs it got (they are interchangeable). */
  allocate(req: AllocateRequest): AllocateResponse {
    const known = new Set(this.devices().map((d) => d.ID));
    return {
      containerResponses: req.containerRequests.map((c) => {
        for (const id of c.devicesIds) {
          if (!known.has(id))
            throw new Error(`${this.o.device.resourceName}: no device ${JSON.stringify(id)}`);
        }
        return {
          envs: {},
          annotations: {},
          mounts: [],
          cdiDevices: [],
          devices: [
            {
              containerPath: this.o.device.devicePath,
              hostPath: this.o.device.devicePath,
              permissions: this.o.device.permissions ?? 'rw',
            },
          ],
        };
      }),
    };
  }

  private register(): Promise<void> {
    const client = new RegistrationClient(
      `unix://${join(this.dir, KUBELET_SOCKET)}`,
      credentials.createInsecure(),
    );
    return new Promise<void>((resolve, reject) => {
      client.register(
        {
          version: DEVICE_PLUGIN_VERSION,
          endpoint: this.endpoint,
          resourceName: this.o.device.resourceName,
          options: { preStartRequired: false, getPreferredAllocationAvailable: false },
        },
        new Metadata(),
        { deadline: new Date(Date.now() + 10_000) },
        (e) => {
          client.close();
          if (e)
            reject(new Error(`registering ${this.o.device.resourceName} with the kubelet: ${e.message}`));
          else {
            this.log(
              `registered (${this.o.device.count} devices, ${this.healthy ? 'healthy' : 'unhealthy'})`,
            );
            resolve();
          }
        },
      );
    });
  }

  private async closeServer(): Promise<void> {
    for (const s of this.streams) s.end();
    this.streams.clear();
    const server = this.server;
    this.server = undefined;
    if (server) await new Promise<void>((r) => server.tryShutdown(() => r()));
  }

  /** Stops serving and removes the socket. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.closeServer();
    await rm(this.socketPath, { force: true });
  }
}
