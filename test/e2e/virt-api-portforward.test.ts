/**
 * `virtctl port-forward --kubeconfig` on a real control plane: the CLI opens upstream's
 * websocket `virtualmachineinstances/NAME/portforward/PORT/tcp` (`plain.kubevirt.io`) on
 * kube-apiserver, whose aggregator proxies it to virt-api (front-proxy certificate), which
 * dials the VMI's interface address, as upstream's virt-api does. Both the loopback
 * listener and `--stdio` (what `virtctl ssh` puts in ProxyCommand) are driven as a user
 * would, with the built CLI.
 *
 * The guest is a stand-in: the control plane here has no pod network (no kubelet), so the
 * VMI's status names 127.0.0.1, where this test's TCP echo server listens (the real guest
 * behind a pod IP is test/e2e/network-local-ssh.test.ts, in local mode). virt-api runs in
 * this process; the APIService points at an ExternalName Service on 127.0.0.1, as in
 * test/e2e/virt-api.test.ts.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import path, { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crdsDir } from '../../scripts/gen-crds';
import { createClusterConfig } from '../../src/api/config/cluster-config';
import { KubeClient } from '../../src/controllers/runtime/kube/client';
import { VirtualMachineInstanceType } from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { startVirtApi, type VirtApi } from '../../src/controllers/virt-api/server';
import { virtApiComponents } from '../../src/controllers/virt-operator/components/virt-api';
import {
  type ControlPlane,
  available as kubeAvailable,
  kubeBinDir,
  unavailableReason as kubeUnavailableReason,
  startControlPlane,
} from '../support/kube';
import { issue, makeCa } from '../support/tls-certs';
import { cliBuilt, cliEntry, e2eRun, waitFor } from './node-harness';

const kubectl = path.join(kubeBinDir, 'kubectl');
const run = e2eRun('virtctl port-forward through virt-api (real control plane)', () =>
  !kubeAvailable()
    ? kubeUnavailableReason
    : !existsSync(kubectl)
      ? `no kubectl at ${kubectl}`
      : !cliBuilt()
        ? 'npm run build first'
        : undefined,
);

describe.runIf(run)('virtctl port-forward through kube-apiserver and virt-api', () => {
  const ns = 'default';
  const name = `pf-${process.pid}`;
  let cp: ControlPlane | undefined;
  let client: KubeClient;
  let api: VirtApi | undefined;
  let echo: Server | undefined;
  let echoPort = 0;
  const seen: number[] = [];

  const k = (args: string[]) =>
    new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(kubectl, ['--kubeconfig', cp?.kubeconfigPath ?? '', ...args], {
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
  const virtctl = (args: string[]) =>
    spawn(process.execPath, [cliEntry(), 'virtctl', ...args, '--kubeconfig', cp?.kubeconfigPath ?? ''], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });

  beforeAll(async () => {
    // The stand-in guest's echo server: counts each connection's bytes.
    echo = createServer((s) => {
      let n = 0;
      s.on('data', (d) => {
        n += d.length;
        s.write(d);
      });
      s.on('close', () => seen.push(n));
    });
    await new Promise<void>((r) => echo?.listen(0, '127.0.0.1', () => r()));
    echoPort = (echo.address() as { port: number }).port;

    cp = await startControlPlane({});
    const crds = await k(['apply', '-f', crdsDir]);
    expect(crds.status, crds.stderr).toBe(0);
    const waited = await k([
      'wait',
      '--for=condition=Established',
      '--timeout=60s',
      'crd/virtualmachineinstances.kubevirt.io',
    ]);
    expect(waited.status, waited.stderr).toBe(0);
    client = KubeClient.fromKubeconfig(cp.kubeconfigPath);

    const pki = join(cp.dir, 'kubevirt-pki');
    const ca = makeCa(pki, 'kubevirt-ca');
    const serving = issue(pki, ca, 'virt-api', 'virt-api', ['IP:127.0.0.1', 'DNS:virt-api.kubevirt.svc']);
    const apiClient = issue(pki, ca, 'api-client', 'kubevirt.io:system:client:virt-handler');
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
      privilegedUsers: ['kubevirt-ts-admin'],
      // No handler is asked: port-forward is dialed by virt-api itself.
      handler: { tls: { ...apiClient, ca: ca.cert }, port: 1, resolveHandler: async () => '127.0.0.1' },
    });
    const rendered = virtApiComponents({
      namespace: 'kubevirt',
      image: 'kubevirt-ts:dev',
      caBundle: readFileSync(ca.cert, 'utf8'),
      webhookUrl: `https://127.0.0.1:${api.port}`,
    });
    const apiService = rendered.find((o) => o.kind === 'APIService') as {
      spec: { service: { port: number } };
    };
    apiService.spec.service.port = api.port;
    const file = join(cp.dir, 'pf-objects.json');
    writeFileSync(
      file,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'List',
        items: [
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
        ],
      }),
    );
    const applied = await k(['apply', '-f', file]);
    expect(applied.status, applied.stderr).toBe(0);
    const avail = await k([
      'wait',
      '--for=condition=Available',
      '--timeout=60s',
      'apiservice/v1.subresources.kubevirt.io',
    ]);
    expect(avail.status, avail.stderr).toBe(0);

    // The VMI, Running, its interface at the stand-in's address.
    // (The VMI CRD has no status subresource, as upstream: status is written with the object.)
    const vmi = await client.create<KubeObject>(VirtualMachineInstanceType, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name, namespace: ns },
      spec: { domain: { devices: {} }, nodeSelector: { nowhere: 'true' } },
    } as KubeObject);
    await client.update(VirtualMachineInstanceType, {
      ...vmi,
      status: { phase: 'Running', interfaces: [{ name: 'default', ipAddress: '127.0.0.1' }] },
    } as KubeObject);
  }, 300_000);

  afterAll(async () => {
    await api?.close();
    client?.close();
    await cp?.stop();
    echo?.close();
  }, 120_000);

  it('carries bytes from a loopback port and from --stdio to the guest port, and refuses a paused VMI and one not running', {
    timeout: 120_000,
  }, async () => {
    // Loopback listener: send, wait for the whole echo, then close (a websocket has no half-close).
    const pf = virtctl(['port-forward', `vmi/${name}/${ns}`, `0:${echoPort}`]);
    let pfOut = '';
    pf.stdout.on('data', (d) => {
      pfOut += d;
    });
    pf.stderr.on('data', (d) => {
      pfOut += d;
    });
    try {
      const m = await waitFor(
        'port-forward to listen',
        () => /Forwarding from 127\.0\.0\.1:(\d+)/.exec(pfOut) ?? undefined,
        60_000,
      );
      const got = await new Promise<number>((resolve, reject) => {
        const c = connect(Number(m[1]), '127.0.0.1', () => c.write(Buffer.alloc(200_000, 9)));
        let n = 0;
        c.on('data', (d) => {
          n += d.length;
          if (n >= 200_000) c.end();
        });
        c.on('close', () => resolve(n));
        c.on('error', reject);
      });
      expect(got).toBe(200_000);
      await waitFor('the guest side to count them', () => seen.includes(200_000), 30_000);
      process.stdout.write(
        `port-forward --kubeconfig: 127.0.0.1:${m[1]} -> kube-apiserver -> virt-api -> ${name} 127.0.0.1:${echoPort}: 200000 sent, 200000 echoed\n`,
      );
    } finally {
      pf.kill('SIGINT');
    }

    // --stdio: bytes on stdin come back on stdout.
    const stdio = virtctl(['port-forward', '--stdio', `vmi/${name}.${ns}`, String(echoPort)]);
    const chunks: Buffer[] = [];
    stdio.stdout.on('data', (d: Buffer) => chunks.push(d));
    let err = '';
    stdio.stderr.on('data', (d) => {
      err += d;
    });
    stdio.stdin.write('hello through the API server\n');
    await waitFor(
      'the stdio echo',
      () => Buffer.concat(chunks).toString().includes('hello through the API server\n'),
      60_000,
    );
    stdio.stdin.end();
    const code = await new Promise<number | null>((r) => stdio.on('close', r));
    expect(code, err).toBe(0);
    expect(Buffer.concat(chunks).toString()).toBe('hello through the API server\n');

    const refusal = async (args: string[]) => {
      const p = virtctl(args);
      let e = '';
      p.stderr.on('data', (d) => {
        e += d;
      });
      p.stdin.end();
      const c = await new Promise<number | null>((r) => p.on('close', r));
      return { code: c, err: e };
    };
    // A paused VMI is refused, as upstream's validateVMIForPortForward does.
    const running = await client.get<KubeObject>(VirtualMachineInstanceType, name, ns);
    await client.update(VirtualMachineInstanceType, {
      ...running,
      status: {
        phase: 'Running',
        interfaces: [{ name: 'default', ipAddress: '127.0.0.1' }],
        conditions: [{ type: 'Paused', status: 'True' }],
      },
    } as KubeObject);
    const paused = await refusal(['port-forward', '--stdio', `vmi/${name}/${ns}`, String(echoPort)]);
    expect(paused.code).not.toBe(0);
    expect(paused.err).toContain(`virtualmachineinstance.kubevirt.io "${name}": VMI is paused`);

    // A VMI that is not running: the CLI's stdio forward fails with virt-api's message.
    const stopped = await client.get<KubeObject>(VirtualMachineInstanceType, name, ns);
    await client.update(VirtualMachineInstanceType, {
      ...stopped,
      status: { phase: 'Succeeded' },
    } as KubeObject);
    const refused = virtctl(['port-forward', '--stdio', `vmi/${name}`, '-n', ns, String(echoPort)]);
    let refusedErr = '';
    refused.stderr.on('data', (d) => {
      refusedErr += d;
    });
    refused.stdin.end();
    const refusedCode = await new Promise<number | null>((r) => refused.on('close', r));
    expect(refusedCode).not.toBe(0);
    expect(refusedErr).toContain(`VMI ${name} is not running`);
  });
});
