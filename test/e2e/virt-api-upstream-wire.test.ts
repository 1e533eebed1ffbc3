/**
 * Upstream virtctl's wire protocol against kubevirt-ts's virt-api, through a real
 * kube-apiserver's aggregator, with a booted guest and its real qemu-ga.
 *
 * Upstream's modules are not on the Go module proxy (403), and this test needs no Go
 * build of upstream's virtctl (it builds only from upstream's source tree with its vendored
 * modules, docs/virt-api.md), so it replays the requests its client
 * (client-go's kubevirt typed client and kubecli's websocket helper, read from upstream's
 * source) sends: the same paths, methods, bodies (`{"paused":true}`, `{}` from a marshalled
 * PauseOptions, no body at all for softreboot/unfreeze, `{"unfreezeTimeout":"5m0s"}` for
 * freeze, `?moveCursor=false` on vnc/screenshot), headers, and the websocket's
 * `plain.kubevirt.io` subprotocol read the way upstream's binaryReader reads it (binary
 * frames only). kubevirt-ts's own virtctl covers freeze, unfreeze and `vnc screenshot`.
 */

import { existsSync, readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebSocketStream, WebSocket } from 'ws';
import { rfbHandshake } from '../../src/controllers/common/rfb-client';
import { LibvirtClient } from '../../src/drivers/libvirt';
import { available as kubeAvailable, unavailableReason as kubeUnavailableReason } from '../support/kube';
import { cliEntry, e2eRun, tinyGuestVm, waitFor } from './node-harness';
import { kubectl, runAsync, startVirtApiCluster, type VirtApiCluster } from './virt-api-cluster';

const run = e2eRun('virt-api: upstream virtctl wire protocol (real control plane)', () =>
  !kubeAvailable() ? kubeUnavailableReason : !existsSync(kubectl) ? `no kubectl at ${kubectl}` : undefined,
);

/** What client-go sends besides the body. */
const CLIENT_GO_HEADERS = {
  accept: 'application/json, */*',
  'user-agent': 'virtctl/v1.5.0 (linux/amd64) kubernetes/0000000',
};

describe.runIf(run)('upstream virtctl requests against kubevirt-ts virt-api', () => {
  const ns = 'default';
  const name = `e2e-wire-${process.pid}`;
  let c: VirtApiCluster;
  let libvirt: LibvirtClient;
  const vmiBase = () => `/apis/subresources.kubevirt.io/v1/namespaces/${ns}/virtualmachineinstances/${name}`;
  const vmBase = () => `/apis/subresources.kubevirt.io/v1/namespaces/${ns}/virtualmachines/${name}`;

  /** One request as client-go makes it (admin credentials): `body` undefined sends none. */
  const call = (method: 'GET' | 'PUT', path: string, body?: string) =>
    new Promise<{ status: number; type: string; body: Buffer }>((resolve, reject) => {
      const url = new URL(path, c.cp.server);
      const headers: Record<string, string | number> = { ...CLIENT_GO_HEADERS };
      if (body !== undefined) headers['content-type'] = 'application/json';
      headers['content-length'] = Buffer.byteLength(body ?? '');
      const req = request(
        url,
        {
          method,
          headers,
          ca: readFileSync(c.cp.tls.ca),
          cert: readFileSync(c.cp.tls.cert),
          key: readFileSync(c.cp.tls.key),
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (d: Buffer) => chunks.push(d));
          res.on('end', () =>
            resolve({
              status: res.statusCode ?? 0,
              type: String(res.headers['content-type'] ?? ''),
              body: Buffer.concat(chunks),
            }),
          );
        },
      );
      req.on('error', reject);
      req.end(body ?? '');
    });

  /** A websocket as kubecli's asyncSubresourceHelper opens it. */
  const websocket = async (sub: string) => {
    const ws = new WebSocket(
      `${c.cp.server.replace('https://', 'wss://')}${vmiBase()}/${sub}`,
      ['plain.kubevirt.io'],
      {
        ca: readFileSync(c.cp.tls.ca),
        cert: readFileSync(c.cp.tls.cert),
        key: readFileSync(c.cp.tls.key),
        headers: { 'user-agent': CLIENT_GO_HEADERS['user-agent'] },
      },
    );
    await new Promise((r, j) => {
      ws.once('open', r);
      ws.once('error', j);
    });
    expect(ws.protocol).toBe('plain.kubevirt.io');
    return ws;
  };

  const vmi = () => c.node.getVmi(ns, name);
  const cond = async (type: string) =>
    (await vmi()).status?.conditions?.some((x) => x.type === type && x.status === 'True') ?? false;
  const domain = async () => libvirt.domainLookupByName(`${ns}_${name}`);
  const agent = async (cmd: string) =>
    JSON.parse(
      (await libvirt.qemuAgentCommand(await domain(), JSON.stringify({ execute: cmd }), 10)) ?? '{}',
    ) as {
      return?: unknown;
    };
  const virtctl = (args: string[]) =>
    runAsync(process.execPath, [
      cliEntry(),
      'virtctl',
      ...args,
      '-n',
      ns,
      '--kubeconfig',
      c.cp.kubeconfigPath,
    ]);

  beforeAll(async () => {
    c = await startVirtApiCluster(`node-wire-${process.pid}`);
    libvirt = await LibvirtClient.connect({ uri: 'qemu:///system' });
    const vm = tinyGuestVm(name, ns, 'Halted') as {
      spec: { template: { spec: { domain: { devices: Record<string, unknown> } } } };
    };
    // A display for VNC and the screenshot.
    vm.spec.template.spec.domain.devices.autoattachGraphicsDevice = true;
    // And a block filesystem for qemu-ga to freeze: the guest image's ext4 disk, which the
    // guest's init mounts at /mnt/disk. Without one (the initramfs alone) qemu-ga's
    // guest-fsfreeze-freeze freezes nothing, answers 0 and stays thawed.
    const spec = vm.spec.template.spec as unknown as {
      volumes?: unknown[];
      domain: { devices: { disks?: unknown[] } };
    };
    spec.domain.devices.disks = [{ name: 'data', disk: { bus: 'virtio' } }];
    spec.volumes = [
      { name: 'data', containerDisk: { image: 'kubevirt-ts/tiny-guest', path: '/disk.qcow2' } },
    ];
    const r = await c.apply([vm]);
    expect(r.status, r.stderr).toBe(0);
  }, 300_000);

  afterAll(async () => {
    await libvirt?.close();
    await c?.close(`${ns}_${name}`);
  }, 120_000);

  it('start {"paused":true,"dryRun":["All"]} changes nothing; {"paused":true} starts the guest paused; unpause {} runs it', async () => {
    const dry = await call('PUT', `${vmBase()}/start`, JSON.stringify({ paused: true, dryRun: ['All'] }));
    expect(dry.status, dry.body.toString()).toBeLessThan(300);
    const after = await c.node.getVm(ns, name);
    expect(after.spec?.runStrategy).toBe('Halted');
    expect(after.status?.stateChangeRequests).toBeUndefined();

    const start = await call('PUT', `${vmBase()}/start`, JSON.stringify({ paused: true }));
    expect(start.status, start.body.toString()).toBeLessThan(300);
    await waitFor(
      'the VMI Running and Paused',
      async () => (await vmi()).status?.phase === 'Running' && (await cond('Paused')),
      300_000,
    );
    expect((await vmi()).spec?.startStrategy).toBe('Paused');
    // libvirt's own view: the domain exists and its vCPUs wait (virDomainState 3, paused).
    expect((await libvirt.domainGetState(await domain())).state).toBe(3);

    const unpause = await call('PUT', `${vmiBase()}/unpause`, '{}');
    expect(unpause.status, unpause.body.toString()).toBeLessThan(300);
    await waitFor('the Paused condition gone', async () => !(await cond('Paused')), 60_000);
    expect((await libvirt.domainGetState(await domain())).state).toBe(1);
  }, 420_000);

  it('console: plain.kubevirt.io, binary frames both ways, the shell answers', async () => {
    const ws = await websocket('console');
    let out = '';
    let textFrames = 0;
    ws.on('message', (d: Buffer, isBinary: boolean) => {
      // upstream's binaryReader drops text frames: everything must come as binary.
      if (!isBinary) textFrames++;
      out += d.toString('utf8');
    });
    const deadline = Date.now() + 240_000;
    while (!out.includes('WIRE-42')) {
      if (Date.now() > deadline)
        throw new Error(`no answer on the console; got ${JSON.stringify(out.slice(-400))}`);
      ws.send(Buffer.from('echo WIRE-$((6*7))\n'), { binary: true });
      await new Promise((r) => setTimeout(r, 2_000));
    }
    ws.close();
    expect(textFrames).toBe(0);
  }, 300_000);

  it('guestosinfo, userlist, filesystemlist answer the JSON client-go decodes', async () => {
    await waitFor('AgentConnected', () => cond('AgentConnected'), 180_000);
    const info = await call('GET', `${vmiBase()}/guestosinfo`);
    expect(info.status).toBe(200);
    expect(JSON.parse(info.body.toString()).hostname).toBe('kubevirt-ts-guest');
    for (const sub of ['userlist', 'filesystemlist']) {
      const r = await call('GET', `${vmiBase()}/${sub}`);
      expect(r.status, r.body.toString()).toBe(200);
      expect(Array.isArray(JSON.parse(r.body.toString()).items)).toBe(true);
    }
  }, 240_000);

  it('freeze {"unfreezeTimeout":"5m0s"} and unfreeze (no body) reach the guest\'s qemu-ga', async () => {
    // upstream's handler refuses a freeze without its timeout.
    const noBody = await call('PUT', `${vmiBase()}/freeze`);
    expect(noBody.status).toBe(400);
    expect(noBody.body.toString()).toContain('Unfreeze timeout in freeze request is not set');

    expect((await agent('guest-fsfreeze-status')).return).toBe('thawed');
    const freeze = await call('PUT', `${vmiBase()}/freeze`, JSON.stringify({ unfreezeTimeout: '5m0s' }));
    expect(freeze.status, freeze.body.toString()).toBeLessThan(300);
    expect((await agent('guest-fsfreeze-status')).return).toBe('frozen');
    // upstream's VMI status.fsFreezeStatus, from the launcher's report through virt-handler.
    await waitFor(
      'status.fsFreezeStatus frozen',
      async () => (await vmi()).status?.fsFreezeStatus === 'frozen',
      60_000,
    );
    // Idempotent, as upstream's launcher: a second freeze of a frozen guest succeeds.
    const again = await call('PUT', `${vmiBase()}/freeze`, JSON.stringify({ unfreezeTimeout: '5m0s' }));
    expect(again.status, again.body.toString()).toBeLessThan(300);
    const unfreeze = await call('PUT', `${vmiBase()}/unfreeze`);
    expect(unfreeze.status, unfreeze.body.toString()).toBeLessThan(300);
    expect((await agent('guest-fsfreeze-status')).return).toBe('thawed');
    await waitFor(
      'status.fsFreezeStatus unset',
      async () => (await vmi()).status?.fsFreezeStatus === undefined,
      60_000,
    );

    // The launcher's safety thaw: nobody unfreezes, the guest is thawed after the timeout.
    const short = await virtctl(['freeze', name, '--unfreeze-timeout', '2s']);
    expect(short.status, short.stderr).toBe(0);
    expect((await agent('guest-fsfreeze-status')).return).toBe('frozen');
    await waitFor(
      'the safety thaw',
      async () => (await agent('guest-fsfreeze-status')).return === 'thawed',
      60_000,
    );
    await waitFor(
      'status.fsFreezeStatus unset',
      async () => (await vmi()).status?.fsFreezeStatus === undefined,
      60_000,
    );
    // kubevirt-ts's virtctl both ways.
    expect((await virtctl(['freeze', name])).status).toBe(0);
    expect((await agent('guest-fsfreeze-status')).return).toBe('frozen');
    const thaw = await virtctl(['unfreeze', name]);
    expect(thaw.status, thaw.stderr).toBe(0);
    expect((await agent('guest-fsfreeze-status')).return).toBe('thawed');
  }, 240_000);

  it('vnc/screenshot?moveCursor=false is a PNG of the display VNC reports; virtctl vnc screenshot writes it', async () => {
    // The display's size as QEMU's VNC server announces it (RFB ServerInit), over upstream's vnc websocket.
    const ws = await websocket('vnc');
    const stream = createWebSocketStream(ws);
    const rfb = await rfbHandshake(stream);
    stream.destroy();
    expect(rfb.width).toBeGreaterThan(0);

    const ihdr = (png: Buffer) => {
      expect([...png.subarray(0, 8)]).toEqual([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
      expect(png.subarray(12, 16).toString('latin1')).toBe('IHDR');
      return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
    };
    const shot = await call('GET', `${vmiBase()}/vnc/screenshot?moveCursor=false`);
    expect(shot.status, shot.body.subarray(0, 300).toString()).toBe(200);
    expect(shot.type).toBe('image/png');
    expect(ihdr(shot.body)).toEqual({ width: rfb.width, height: rfb.height });

    const moved = await call('GET', `${vmiBase()}/vnc/screenshot?moveCursor=true`);
    expect(moved.status, moved.body.subarray(0, 300).toString()).toBe(200);
    expect(ihdr(moved.body)).toEqual({ width: rfb.width, height: rfb.height });
    const bad = await call('GET', `${vmiBase()}/vnc/screenshot?moveCursor=maybe`);
    expect(bad.status).toBe(400);

    const file = join(c.cp.dir, 'shot.png');
    const v = await virtctl(['vnc', 'screenshot', name, '--file', file]);
    expect(v.status, v.stderr).toBe(0);
    expect(ihdr(readFileSync(file))).toEqual({ width: rfb.width, height: rfb.height });
  }, 240_000);

  it('pause {} (a marshalled PauseOptions), softreboot with no body, stop {"dryRun":["All"]}', async () => {
    const pause = await call('PUT', `${vmiBase()}/pause`, '{}');
    expect(pause.status, pause.body.toString()).toBeLessThan(300);
    await waitFor('Paused', () => cond('Paused'), 60_000);
    const again = await call('PUT', `${vmiBase()}/pause`, '{}');
    expect(again.status).toBe(409);
    expect(again.body.toString()).toContain('already paused');
    expect((await call('PUT', `${vmiBase()}/unpause`, '{}')).status).toBeLessThan(300);
    await waitFor('unpaused', async () => !(await cond('Paused')), 60_000);

    const stopDry = await call('PUT', `${vmBase()}/stop`, JSON.stringify({ dryRun: ['All'] }));
    expect(stopDry.status, stopDry.body.toString()).toBeLessThan(300);
    expect((await c.node.getVm(ns, name)).spec?.runStrategy).not.toBe('Halted');
    const reboot = await call('PUT', `${vmiBase()}/softreboot`);
    expect(reboot.status, reboot.body.toString()).toBeLessThan(300);
  }, 180_000);
});
