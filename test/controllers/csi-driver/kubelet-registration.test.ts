/**
 * The driver's registration with the kubelet, with the test as the kubelet's plugin
 * watcher: GetInfo answers a CSIPlugin named csi.kubevirt-ts.io at the CSI socket's path
 * with CSI 1.0.0; NotifyRegistrationStatus is recorded; a removed socket is served again;
 * stop removes it.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { RegistrationClient } from '../../../src/controllers/csi-driver/generated-kubelet/pluginregistration/v1/api';
import { KubeletRegistration } from '../../../src/controllers/csi-driver/kubelet-registration';
import { waitFor } from '../../support/wait';

function call<Q, R>(
  client: RegistrationClient,
  method: 'getInfo' | 'notifyRegistrationStatus',
  req: Q,
): Promise<R> {
  return new Promise((resolve, reject) =>
    (client[method] as unknown as (q: Q, cb: (e: Error | null, r: R) => void) => void).call(
      client,
      req,
      (e, r) => (e ? reject(e) : resolve(r)),
    ),
  );
}

describe('kubelet plugin registration', () => {
  let dir = '';
  let reg: KubeletRegistration | undefined;
  afterEach(async () => {
    await reg?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('answers the plugin watcher as node-driver-registrar does, and keeps its socket there', async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvts-reg-'));
    const registry = join(dir, 'plugins_registry');
    const logs: string[] = [];
    reg = new KubeletRegistration({
      registryDir: registry,
      driverName: 'csi.kubevirt-ts.io',
      csiEndpoint: '/var/lib/kubelet/plugins/csi.kubevirt-ts.io/csi.sock',
      checkMs: 50,
      log: (m) => logs.push(m),
    });
    await reg.start();
    expect(reg.socketPath).toBe(join(registry, 'csi.kubevirt-ts.io-reg.sock'));
    const client = new RegistrationClient(`unix:${reg.socketPath}`, credentials.createInsecure());
    try {
      expect(await call(client, 'getInfo', {})).toEqual({
        type: 'CSIPlugin',
        name: 'csi.kubevirt-ts.io',
        endpoint: '/var/lib/kubelet/plugins/csi.kubevirt-ts.io/csi.sock',
        supportedVersions: ['1.0.0'],
      });
      await call(client, 'notifyRegistrationStatus', { pluginRegistered: false, error: 'version mismatch' });
      expect(reg.state).toEqual({ registered: false, error: 'version mismatch' });
      await call(client, 'notifyRegistrationStatus', { pluginRegistered: true, error: '' });
      expect(reg.state).toEqual({ registered: true, error: undefined });
      expect(logs).toContain(`registered with the kubelet (${reg.socketPath})`);
    } finally {
      client.close();
    }
    // The directory cleaned out from under it: the socket comes back, and answers.
    await rm(reg.socketPath);
    await waitFor('the registration socket served again', () => existsSync(reg!.socketPath), 5000, 20);
    const again = new RegistrationClient(`unix:${reg.socketPath}`, credentials.createInsecure());
    try {
      expect(await call<object, { name: string }>(again, 'getInfo', {})).toMatchObject({
        name: 'csi.kubevirt-ts.io',
      });
    } finally {
      again.close();
    }
    await reg.stop();
    reg = undefined;
    expect(existsSync(join(registry, 'csi.kubevirt-ts.io-reg.sock'))).toBe(false);
  });
});
