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
 * address instead of looking up the virt-handler pod of the node.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import path, { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { crdsDir } from '../../scripts/gen-crds';
import { createClusterConfig } from '../../src/api/config/cluster-config';
import { KubeClient } from '../../src/controllers/runtime/kube/client';
import { VirtualMachineType } from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { startVirtApi, type VirtApi } from '../../src/controllers/virt-api/server';
import { type HandlerRestServer, serveHandlerRest } from '../../src/controllers/virt-handler/rest-server';
import { virtApiComponents } from '../../src/controllers/virt-operator/components/virt-api';
import {
  type ControlPlane,
  available as kubeAvailable,
  kubeBinDir,
  unavailableReason as kubeUnavailableReason,
  startControlPlane,
} from '../support/kube';
import { type CertFiles, issue, makeCa } from '../support/tls-certs';
import { cliEntry, e2eRun, NodeHarness, tinyGuestVm, waitFor } from './node-harness';

const kubectl = path.join(kubeBinDir, 'kubectl');
const run = e2eRun('virt-api end to end (real control plane)', () =>
  !kubeAvailable() ? kubeUnavailableReason : !existsSync(kubectl) ? `no kubectl at ${kubectl}` : undefined,
);

describe.runIf(run)('virt-api on a real control plane', () => {
  const ns = 'default';
  const name = `e2e-virtapi-${process.pid}`;
  let cp: ControlPlane | undefined;
  let client: KubeClient;
  let api: VirtApi | undefined;
  let rest: HandlerRestServer | undefined;
  let node: NodeHarness | undefined;
  let ca: CertFiles;

  // Asynchronous: virt-api runs in this process and must answer while kubectl waits.
  const k = (args: string[], kubeconfig = cp?.kubeconfigPath ?? '') =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(kubectl, ['--kubeconfig', kubeconfig, ...args], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
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
  const apply = async (objects: unknown[]) => {
    const file = join(cp?.dir ?? '', `objs-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
    return k(['apply', '-f', file]);
  };

  beforeAll(async () => {
    cp = await startControlPlane({ controllerManager: true, scheduler: true });
    const crds = await k(['apply', '-f', crdsDir]);
    expect(crds.status, crds.stderr).toBe(0);
    const waited = await k([
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/virtualmachines.kubevirt.io',
      'crd/virtualmachineinstances.kubevirt.io',
    ]);
    expect(waited.status, waited.stderr).toBe(0);
    client = KubeClient.fromKubeconfig(cp.kubeconfigPath, { qps: 200, burst: 400 });

    const pki = join(cp.dir, 'kubevirt-pki');
    ca = makeCa(pki, 'kubevirt-ca');
    const serving = issue(pki, ca, 'virt-api', 'virt-api', ['IP:127.0.0.1', 'DNS:virt-api.kubevirt.svc']);
    const handlerServing = issue(pki, ca, 'handler', 'kubevirt.io:system:node:virt-handler', [
      'IP:127.0.0.1',
    ]);
    const apiClient = issue(pki, ca, 'api-client', 'kubevirt.io:system:client:virt-handler');

    node = new NodeHarness({ client, nodeName: `node-virtapi-${process.pid}`, bindPending: false });
    await node.start();
    rest = await serveHandlerRest({
      launchers: node.handler!,
      host: '127.0.0.1',
      port: 0,
      tls: { ...handlerServing, ca: ca.cert },
    });
    api = await startVirtApi({
      client,
      tls: serving,
      host: '127.0.0.1',
      port: 0,
      config: () =>
        createClusterConfig(
          { developerConfiguration: { useEmulation: true } },
          { hostArchitecture: 'amd64' },
        ),
      kubevirtNamespace: 'kubevirt',
      // The controller and handler here act as the admin (in a cluster: KubeVirt's service accounts).
      privilegedUsers: ['kubevirt-ts-admin'],
      handler: {
        tls: { ...apiClient, ca: ca.cert },
        port: rest.port,
        resolveHandler: async () => '127.0.0.1',
      },
    });

    const rendered = virtApiComponents({
      namespace: 'kubevirt',
      image: 'kubevirt-ts:dev',
      caBundle: readFileSync(ca.cert, 'utf8'),
      webhookUrl: `https://127.0.0.1:${api.port}`,
    });
    const pick = (kind: string) => rendered.filter((o) => o.kind === kind);
    const apiService = pick('APIService')[0] as { spec: { service: { port: number } } };
    apiService.spec.service.port = api.port;
    const objs = [
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'kubevirt' } },
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'virt-api', namespace: 'kubevirt' },
        spec: {
          type: 'ExternalName',
          externalName: '127.0.0.1',
          ports: [{ port: api.port, protocol: 'TCP' }],
        },
      },
      apiService,
      ...pick('MutatingWebhookConfiguration'),
      ...pick('ValidatingWebhookConfiguration'),
    ];
    const applied = await apply(objs);
    expect(applied.status, applied.stderr).toBe(0);
    const avail = await k([
      'wait',
      '--for=condition=Available',
      '--timeout=60s',
      'apiservice/v1.subresources.kubevirt.io',
    ]);
    expect(
      avail.status,
      `${avail.stderr}\n${(await k(['get', 'apiservice/v1.subresources.kubevirt.io', '-o', 'yaml'])).stdout}`,
    ).toBe(0);
  }, 300_000);

  afterAll(async () => {
    await node?.close(`${ns}_${name}`);
    await api?.close();
    await rest?.close();
    client?.close();
    await cp?.stop();
  }, 120_000);

  it('kubectl apply goes through the webhooks: a defaulted field reads back', async () => {
    const vm = tinyGuestVm(name, ns, 'Halted');
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
