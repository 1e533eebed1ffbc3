/**
 * virt-handler's device plugins against a fake kubelet: a Registration server on
 * kubelet.sock in a temp device-plugins directory records what registers, then dials
 * the plugin's socket as the kubelet does: options, ListAndWatch (1000 healthy devices,
 * Unhealthy once the device node is gone), Allocate (the device node for the container;
 * an unknown device ID refused), and a re-registration when the kubelet clears the
 * directory (restart).
 */
import { mkdtempSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, Server, ServerCredentials } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DevicePlugin } from '../../../src/controllers/virt-handler/device-plugin/device-plugin';
import {
  DevicePluginClient,
  type ListAndWatchResponse,
  type RegisterRequest,
  RegistrationService,
} from '../../../src/controllers/virt-handler/device-plugin/generated/deviceplugin/v1beta1/api';
import { nodeSharedDevices } from '../../../src/controllers/virt-handler/device-plugin/node-devices';
import { nodeDeviceResources } from '../../../src/controllers/virt-handler/node-labels';

async function waitFor<T>(what: string, fn: () => T | undefined | false, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('kubelet device plugin', () => {
  let dir = '';
  let fakeDev = '';
  let kubelet: Server;
  const registered: RegisterRequest[] = [];
  let plugin: DevicePlugin;
  let client: DevicePluginClient;
  const updates: ListAndWatchResponse[] = [];

  const startKubelet = async () => {
    kubelet = new Server();
    kubelet.addService(RegistrationService, {
      register: (call: { request: RegisterRequest }, cb: (e: null, r: object) => void) => {
        registered.push(call.request);
        cb(null, {});
      },
    });
    await new Promise<void>((res, rej) =>
      kubelet.bindAsync(`unix://${join(dir, 'kubelet.sock')}`, ServerCredentials.createInsecure(), (e) =>
        e ? rej(e) : res(),
      ),
    );
  };

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kvts-dp-'));
    fakeDev = join(dir, 'fake-kvm');
    writeFileSync(fakeDev, '');
    await startKubelet();
    plugin = new DevicePlugin({
      device: { resourceName: 'devices.kubevirt.io/kvm', devicePath: '/dev/kvm', count: 1000 },
      pluginDir: dir,
      hostPath: fakeDev,
      checkMs: 50,
      log: () => {},
    });
    await plugin.start();
    client = new DevicePluginClient(`unix://${plugin.socketPath}`, credentials.createInsecure());
  });

  afterAll(async () => {
    client?.close();
    await plugin?.stop();
    kubelet?.forceShutdown();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('registers with the kubelet: version, endpoint and resource name', () => {
    expect(registered).toEqual([
      {
        version: 'v1beta1',
        endpoint: 'kubevirt-kvm.sock',
        resourceName: 'devices.kubevirt.io/kvm',
        options: { preStartRequired: false, getPreferredAllocationAvailable: false },
      },
    ]);
  });

  it('answers GetDevicePluginOptions', async () => {
    const opts = await new Promise((res, rej) =>
      client.getDevicePluginOptions({}, (e, r) => (e ? rej(e) : res(r))),
    );
    expect(opts).toEqual({ preStartRequired: false, getPreferredAllocationAvailable: false });
  });

  it('ListAndWatch: 1000 healthy devices, then all Unhealthy when the device node vanishes', async () => {
    const stream = client.listAndWatch({});
    stream.on('data', (m: ListAndWatchResponse) => updates.push(m));
    stream.on('error', () => {});
    const first = await waitFor('the first list', () => updates[0]);
    expect(first.devices).toHaveLength(1000);
    expect(first.devices[0]).toEqual({ ID: 'kvm0', health: 'Healthy' });
    expect(first.devices[999]?.ID).toBe('kvm999');
    expect(new Set(first.devices.map((d) => d.health))).toEqual(new Set(['Healthy']));
    unlinkSync(fakeDev);
    const second = await waitFor('the Unhealthy list', () => updates[1]);
    expect(new Set(second.devices.map((d) => d.health))).toEqual(new Set(['Unhealthy']));
    writeFileSync(fakeDev, '');
    const third = await waitFor('Healthy again', () => updates[2]);
    expect(third.devices[0]?.health).toBe('Healthy');
    stream.cancel();
  });

  it('Allocate: /dev/kvm for each container; an unknown device ID is refused', async () => {
    const res = await new Promise((ok, fail) =>
      client.allocate(
        { containerRequests: [{ devicesIds: ['kvm7'] }, { devicesIds: ['kvm8', 'kvm9'] }] },
        (e, r) => (e ? fail(e) : ok(r)),
      ),
    );
    const one = {
      envs: {},
      annotations: {},
      mounts: [],
      cdiDevices: [],
      devices: [{ containerPath: '/dev/kvm', hostPath: '/dev/kvm', permissions: 'rw' }],
    };
    expect(res).toEqual({ containerResponses: [one, one] });
    const err = await new Promise<Error>((ok) =>
      client.allocate({ containerRequests: [{ devicesIds: ['kvm1000'] }] }, (e) => ok(e as Error)),
    );
    expect(err.message).toContain('devices.kubevirt.io/kvm: no device "kvm1000"');
  });

  it('registers again when the kubelet restarts and clears its directory', async () => {
    kubelet.forceShutdown();
    unlinkSync(plugin.socketPath);
    rmSync(join(dir, 'kubelet.sock'), { force: true });
    await startKubelet();
    await waitFor('a second registration', () => registered.length === 2);
    expect(registered[1]?.endpoint).toBe('kubevirt-kvm.sock');
    client.close();
    client = new DevicePluginClient(`unix://${plugin.socketPath}`, credentials.createInsecure());
    const opts = await new Promise((res, rej) =>
      client.getDevicePluginOptions({}, (e, r) => (e ? rej(e) : res(r))),
    );
    expect(opts).toEqual({ preStartRequired: false, getPreferredAllocationAvailable: false });
  });
});

describe('node shared devices', () => {
  it('kvm, tun and vhost-net 1000 each; sev only with SEV, one per ASID', () => {
    expect(nodeSharedDevices({}).map((d) => [d.resourceName, d.devicePath, d.count])).toEqual([
      ['devices.kubevirt.io/kvm', '/dev/kvm', 1000],
      ['devices.kubevirt.io/tun', '/dev/net/tun', 1000],
      ['devices.kubevirt.io/vhost-net', '/dev/vhost-net', 1000],
    ]);
    const sev = nodeSharedDevices({ sev: { sev: true, maxGuests: 15 } as never });
    expect(sev[3]).toEqual({ resourceName: 'devices.kubevirt.io/sev', devicePath: '/dev/sev', count: 15 });
  });

  it('--max-devices (virtualMachineInstancesPerNode) sets the shared devices and the Node resources, not sev', () => {
    const sev = { sev: true, maxGuests: 15 } as never;
    expect(nodeSharedDevices({ sev }, 7).map((d) => d.count)).toEqual([7, 7, 7, 15]);
    expect(nodeDeviceResources({ kvmUsable: true, sev } as never, {}, 7)).toMatchObject({
      'devices.kubevirt.io/kvm': '7',
      'devices.kubevirt.io/tun': '7',
      'devices.kubevirt.io/vhost-net': '7',
      'devices.kubevirt.io/sev': '15',
    });
  });

  it('refuses a bad resource name or device path', () => {
    expect(
      () => new DevicePlugin({ device: { resourceName: 'kvm', devicePath: '/dev/kvm', count: 1 } }),
    ).toThrow('device plugin: "kvm" is not a resource name');
    expect(
      () =>
        new DevicePlugin({
          device: { resourceName: 'devices.kubevirt.io/x', devicePath: '/etc/passwd', count: 1 },
        }),
    ).toThrow('/etc/passwd is not under /dev');
  });
});
