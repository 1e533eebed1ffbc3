/**
 * virt-api on a real control plane: kube-apiserver calls its webhooks (kubectl apply gets
 * defaults and field-path refusals), the aggregator proxies `subresources.kubevirt.io` to
 * it (front-proxy client certificate), RBAC guards the subresources, and a real guest's
 * serial console, pause and unpause go API server -> virt-api -> virt-handler (mutual TLS)
 * -> launcher.
 *
 * virt-api runs in this process on 127.0.0.1. The APIService points at a Service of type
 * ExternalName whose externalName is 127.0.0.1: the aggregator dials an ExternalName
 * service's name directly, while a ClusterIP needs kube-proxy (there is none) and an
 * Endpoints object naming 127.0.0.1 is refused by the API server (loopback). The webhooks
 * use url clientConfigs. The handler runs as a process, not a pod, so virt-api is told its
 * address instead of looking up the virt-handler pod of the node. The set-up is
 * ./virt-api-cluster's, shared with virt-api-upstream-wire.test.ts.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import type { KubeClient } from '../../src/controllers/runtime/kube/client';
import { VirtualMachineType } from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import type { HandlerRestServer } from '../../src/controllers/virt-handler/rest-server';
import { available as kubeAvailable, unavailableReason as kubeUnavailableReason } from '../support/kube';
import type { CertFiles } from '../support/tls-certs';
import { cliEntry, e2eRun, type NodeHarness, tinyGuestVm, waitFor } from './node-harness';
import { kubectl, startVirtApiCluster, type VirtApiCluster } from './virt-api-cluster';

const run = e2eRun('virt-api end to end (real control plane)', () =>
  !kubeAvailable() ? kubeUnavailableReason : !existsSync(kubectl) ? `no kubectl at ${kubectl}` : undefined,
);

describe.runIf(run)('virt-api on a real control plane', () => {
  const ns = 'default';
  const name = `e2e-virtapi-${process.pid}`;
  let c: VirtApiCluster | undefined;
  let cp: VirtApiCluster['cp'] | undefined;
  let client: KubeClient;
  let rest: HandlerRestServer | undefined;
  let node: NodeHarness | undefined;
  let ca: CertFiles;
  const k: VirtApiCluster['k'] = (args, kubeconfig) => c!.k(args, kubeconfig);
  const apply: VirtApiCluster['apply'] = (objects) => c!.apply(objects);

  beforeAll(async () => {
    c = await startVirtApiCluster(`node-virtapi-${process.pid}`);
    ({ cp, client, rest, node, ca } = c);
  }, 300_000);

  afterAll(async () => {
    await c?.close(`${ns}_${name}`);
  }, 120_000);

  it('kubectl apply goes through the webhooks: a defaulted field reads back', async () => {
    const vm = tinyGuestVm(name, ns, 'Halted') as {
      spec: { template: { spec: { domain: { devices: Record<string, unknown> } } } };
    };
    // A VNC display too, for virtctl vnc below.
    vm.spec.template.spec.domain.devices.autoattachGraphicsDevice = true;
    const r = await apply([vm]);
    expect(r.status, r.stderr).toBe(0);
    const back = await client.get<
      KubeObject & { spec: { template: { spec: { domain: { machine?: { type?: string } } } } } }
    >(VirtualMachineType, name, ns);
    expect(back.spec.template.spec.domain.machine?.type).toBe('q35');
  });

  it('an invalid VM is refused with field paths', async () => {
    const vm = tinyGuestVm(`${name}-bad`, ns, 'Halted') as {
      spec: { template: { spec: { domain: { devices: { disks?: unknown[] } }; volumes?: unknown[] } } };
    };
    vm.spec.template.spec.domain.devices.disks = [
      { name: 'a', disk: {} },
      { name: 'a', disk: {} },
    ];
    vm.spec.template.spec.volumes = [{ name: 'a', emptyDisk: { capacity: '1Mi' } }];
    const r = await apply([vm]);
    expect(r.status).not.toBe(0);
    // kubectl prints an Invalid refusal's causes as field: message.
    expect(r.stderr).toContain(
      'The request is invalid: spec.template.spec.domain.devices.disks[1].name: spec.template.spec.domain.devices.disks[1] and spec.template.spec.domain.devices.disks[0] must not have the same Name.',
    );
  });

  it('a VMI spec update by a user is refused', async () => {
    const vmi = {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: `${name}-vmi`, namespace: ns },
      spec: {
        domain: { devices: {}, resources: { requests: { memory: '64Mi' } } },
        nodeSelector: { nowhere: 'true' },
      },
    };
    const c = await apply([vmi]);
    expect(c.status, c.stderr).toBe(0);
    const alice = cp!.kubeconfigFor('alice', ['system:masters']);
    const p = await k(
      ['patch', 'vmi', `${name}-vmi`, '-n', ns, '--type=merge', '-p', '{"spec":{"hostname":"changed"}}'],
      alice,
    );
    expect(p.status).not.toBe(0);
    expect(p.stderr).toContain('spec: update of VMI object is restricted');
    await k(['delete', 'vmi', `${name}-vmi`, '-n', ns, '--wait=false']);
  });

  it('kubectl get --raw lists the subresources; RBAC refuses a user without virtualmachineinstances/console', async () => {
    const list = await k(['get', '--raw', '/apis/subresources.kubevirt.io/v1']);
    expect(list.status, list.stderr).toBe(0);
    const names = (JSON.parse(list.stdout) as { resources: Array<{ name: string }> }).resources.map(
      (r) => r.name,
    );
    expect(names).toEqual(
      expect.arrayContaining([
        'virtualmachineinstances/console',
        'virtualmachineinstances/pause',
        'virtualmachines/start',
      ]),
    );
    const viewer = cp!.kubeconfigFor('vm-viewer');
    const consolePath = `/apis/subresources.kubevirt.io/v1/namespaces/${ns}/virtualmachineinstances/${name}/console`;
    const denied = await k(['get', '--raw', consolePath], viewer);
    expect(denied.status).not.toBe(0);
    expect(denied.stderr).toMatch(/Forbidden/);
    // With the permission, the request reaches virt-api as that user (the front proxy authenticated it).
    const role = await apply([
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'Role',
        metadata: { name: 'console', namespace: ns },
        rules: [
          {
            apiGroups: ['subresources.kubevirt.io'],
            resources: ['virtualmachineinstances/console'],
            verbs: ['get'],
          },
        ],
      },
      {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'RoleBinding',
        metadata: { name: 'console', namespace: ns },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'console' },
        subjects: [{ kind: 'User', name: 'vm-viewer' }],
      },
    ]);
    expect(role.status, role.stderr).toBe(0);
    const allowed = await k(['get', '--raw', consolePath], viewer);
    expect(allowed.stderr).not.toMatch(/Forbidden/);
    expect(allowed.stderr).toMatch(/not found|not running|websocket/);
  });

  it('start through virtctl, the guest boots; console through the websocket; pause, unpause, guestosinfo through raw calls', async () => {
    const virtctl = await new Promise<{ status: number | null; stderr: string }>((resolve) => {
      const args = [cliEntry(), 'virtctl', 'start', name, '-n', ns, '--kubeconfig', cp!.kubeconfigPath];
      const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      child.on('close', (status) => resolve({ status, stderr }));
    });
    expect(virtctl.status, virtctl.stderr).toBe(0);
    await waitFor(
      'VMI Running',
      async () => (await node!.getVmi(ns, name)).status?.phase === 'Running',
      300_000,
    ).catch(async (e) => {
      const vm = await node!.getVm(ns, name);
      throw new Error(`${(e as Error).message}; VM status: ${JSON.stringify(vm.status)}`);
    });
    const kc = readFileSync(cp!.tls.cert);
    const ws = new WebSocket(
      `wss://${cp!.server.replace('https://', '')}/apis/subresources.kubevirt.io/v1/namespaces/${ns}/virtualmachineinstances/${name}/console`,
      ['plain.kubevirt.io'],
      { ca: readFileSync(cp!.tls.ca), cert: kc, key: readFileSync(cp!.tls.key) },
    );
    await new Promise((r, j) => {
      ws.once('open', r);
      ws.once('error', j);
    });
    let out = '';
    ws.on('message', (d: Buffer) => {
      out += d.toString('utf8');
    });
    // The shell may still be starting: ask again every 2 s until it answers.
    const deadline = Date.now() + 240_000;
    while (!out.includes('VIRTAPI-42')) {
      if (Date.now() > deadline)
        throw new Error(`no answer on the console; got ${JSON.stringify(out.slice(-500))}`);
      ws.send(Buffer.from('echo VIRTAPI-$((6*7))\n'));
      await new Promise((r) => setTimeout(r, 2_000));
    }
    ws.close();

    const base = `/apis/subresources.kubevirt.io/v1/namespaces/${ns}/virtualmachineinstances/${name}`;
    const body = join(cp!.dir, 'empty.json');
    writeFileSync(body, '{}');
    const paused = await k(['replace', '--raw', `${base}/pause`, '-f', body]);
    expect(paused.status, paused.stderr).toBe(0);
    await waitFor(
      'the Paused condition',
      async () =>
        (await node!.getVmi(ns, name)).status?.conditions?.some(
          (c) => c.type === 'Paused' && c.status === 'True',
        ),
      60_000,
    );
    const again = await k(['replace', '--raw', `${base}/pause`, '-f', body]);
    expect(again.stderr).toMatch(/already paused/);
    const unpaused = await k(['replace', '--raw', `${base}/unpause`, '-f', body]);
    expect(unpaused.status, unpaused.stderr).toBe(0);
    await waitFor(
      'the Paused condition gone',
      async () =>
        !(await node!.getVmi(ns, name)).status?.conditions?.some(
          (c) => c.type === 'Paused' && c.status === 'True',
        ),
      60_000,
    );
    // The tiny guest runs qemu-ga: once it is connected, its answers come back through both hops.
    await waitFor(
      'AgentConnected',
      async () =>
        (await node!.getVmi(ns, name)).status?.conditions?.some(
          (c) => c.type === 'AgentConnected' && c.status === 'True',
        ),
      120_000,
    );
    const info = await k(['get', '--raw', `${base}/guestosinfo`]);
    expect(info.status, info.stderr).toBe(0);
    expect((JSON.parse(info.stdout) as { hostname?: string }).hostname).toBe('kubevirt-ts-guest');
    const fs = await k(['get', '--raw', `${base}/filesystemlist`]);
    expect(fs.status, fs.stderr).toBe(0);
    expect(Array.isArray((JSON.parse(fs.stdout) as { items?: unknown[] }).items)).toBe(true);
    // kubevirt-ts's own virtctl against the cluster speaks the same API.
    const vc = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const args = [cliEntry(), 'virtctl', 'guestosinfo', name, '-n', ns, '--kubeconfig', cp!.kubeconfigPath];
      const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
      });
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
      });
      child.on('close', (status) => resolve({ status, stdout, stderr }));
    });
    expect(vc.status, vc.stderr).toBe(0);
    expect(vc.stdout).toContain('"hostname": "kubevirt-ts-guest"');

    // virtctl console over the cluster's websocket: stdin (not a terminal) goes to the guest.
    const con = spawn(
      process.execPath,
      [cliEntry(), 'virtctl', 'console', name, '-n', ns, '--kubeconfig', cp!.kubeconfigPath],
      {
        stdio: ['pipe', 'pipe', 'pipe'],
      },
    );
    let conOut = '';
    con.stdout.on('data', (d: Buffer) => {
      conOut += d.toString();
    });
    try {
      const until = Date.now() + 120_000;
      while (!conOut.includes('VIRTCTL-42')) {
        if (Date.now() > until)
          throw new Error(`virtctl console: no answer; got ${JSON.stringify(conOut.slice(-300))}`);
        con.stdin.write('echo VIRTCTL-$((6*7))\n');
        await new Promise((r) => setTimeout(r, 2_000));
      }
    } finally {
      con.kill('SIGTERM');
    }
    // virtctl vnc --proxy-only: a loopback port whose first bytes are QEMU's RFB greeting.
    const vnc = spawn(
      process.execPath,
      [cliEntry(), 'virtctl', 'vnc', name, '--proxy-only', '-n', ns, '--kubeconfig', cp!.kubeconfigPath],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    try {
      const port = await new Promise<number>((resolve, reject) => {
        let t = '';
        vnc.stdout.on('data', (d: Buffer) => {
          t += d.toString();
          const m = /"port": (\d+)/.exec(t);
          if (m) resolve(Number(m[1]));
        });
        vnc.once('exit', (c) => reject(new Error(`virtctl vnc exited ${c}`)));
      });
      const greeting = await new Promise<string>((resolve, reject) => {
        const sock = connect(port, '127.0.0.1');
        sock.once('data', (d: Buffer) => {
          resolve(d.toString('latin1'));
          sock.destroy();
        });
        sock.once('error', reject);
        sock.once('close', () => reject(new Error('the VNC proxy closed the connection without a greeting')));
      });
      expect(greeting).toMatch(/^RFB 003\.00\d\n/);
    } finally {
      vnc.kill('SIGTERM');
    }
  }, 600_000);

  it('virt-handler refuses a caller without a client certificate', async () => {
    const err = await new Promise<Error>((resolve) => {
      const req = request(
        {
          host: '127.0.0.1',
          port: rest!.port,
          path: `/v1/namespaces/${ns}/virtualmachineinstances/${name}/pause`,
          method: 'PUT',
          ca: readFileSync(ca.cert),
        },
        () => resolve(new Error('answered')),
      );
      req.on('error', resolve);
      req.end();
    });
    expect(err.message).not.toBe('answered');
  });
});
