/**
 * `npm run bench:virt-api`: VMI creates through a real kube-apiserver, 50 concurrent
 * clients, first with no webhooks, then with virt-api's mutating and validating webhooks
 * registered (virt-api as its own process, `kubevirt-ts virt-api` from dist/, which runs
 * its own bundle dist/cli/virt-api.js). One run of each. Then the same creates once more
 * with the webhooks served by a virt-api started through the whole command tree (dist's
 * program chunk: every command and, through virtctl, @kubernetes/client-node; what
 * `kubevirt-ts virt-api` loaded before it had its own bundle), for the memory it costs.
 * Ends with `BENCH virt-api admission_p50_ms= admission_p99_ms= create_no_webhook_p50_ms=
 * rss_mib= rss_full_cli_mib=` (rss: the virt-api process's resident memory after its run).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { crdsDir } from '../scripts/gen-crds';
import { KubeClient } from '../src/controllers/runtime/kube/client';
import { VirtualMachineInstanceType } from '../src/controllers/runtime/resources';
import type { KubeObject } from '../src/controllers/runtime/types';
import { virtApiComponents } from '../src/controllers/virt-operator/components/virt-api';
import { kubeBinDir, startControlPlane } from '../test/support/kube';
import { issue, makeCa } from '../test/support/tls-certs';

const N = Number(process.env.BENCH_VIRTAPI_CREATES ?? 500);
const CLIENTS = 50;
const cli = join(import.meta.dirname, '..', 'dist', 'cli', 'kubevirt-ts.js');
if (!existsSync(cli)) throw new Error(`${cli} missing: npm run build first`);

const run = (cmd: string, args: string[]) =>
  new Promise<void>((resolve, reject) => {
    const c = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    c.stderr.on('data', (d: Buffer) => {
      err += d.toString();
    });
    c.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')}: ${err}`))));
  });

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? 0;
};

function vmi(prefix: string, i: number): KubeObject {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: `${prefix}-${i}`, namespace: 'default' },
    spec: {
      domain: {
        devices: { disks: [{ name: 'root', disk: {} }] },
        resources: { requests: { memory: '64Mi' } },
      },
      volumes: [{ name: 'root', containerDisk: { image: 'example/tiny' } }],
    },
  } as KubeObject;
}

async function creates(client: KubeClient, prefix: string): Promise<number[]> {
  const lat: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      for (let i = next++; i < N; i = next++) {
        const t = performance.now();
        await client.create(VirtualMachineInstanceType, vmi(prefix, i));
        lat.push(performance.now() - t);
      }
    }),
  );
  return lat;
}

const cp = await startControlPlane({ controllerManager: false, scheduler: false });
const kubectl = join(kubeBinDir, 'kubectl');
let api: ReturnType<typeof spawn> | undefined;
try {
  await run(kubectl, ['--kubeconfig', cp.kubeconfigPath, 'apply', '-f', crdsDir]);
  await run(kubectl, [
    '--kubeconfig',
    cp.kubeconfigPath,
    'wait',
    '--for=condition=Established',
    '--timeout=60s',
    'crd/virtualmachineinstances.kubevirt.io',
  ]);
  const client = KubeClient.fromKubeconfig(cp.kubeconfigPath, { qps: 5000, burst: 5000 });
  const plain = await creates(client, 'plain');

  const pki = join(cp.dir, 'kubevirt-pki');
  const ca = makeCa(pki, 'kubevirt-ca');
  const serving = issue(pki, ca, 'virt-api', 'virt-api', ['IP:127.0.0.1']);
  const apiClient = issue(pki, ca, 'api-client', 'kubevirt.io:system:client:virt-handler');
  const flags = (port: number) => [
    'virt-api',
    '--kubeconfig',
    cp.kubeconfigPath,
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '--tls-cert-file',
    serving.cert,
    '--tls-key-file',
    serving.key,
    '--handler-client-cert',
    apiClient.cert,
    '--handler-client-key',
    apiClient.key,
    '--kubevirt-ca',
    ca.cert,
  ];
  const startApi = async (args: string[]): Promise<ChildProcess> => {
    const p = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    await new Promise<void>((resolve, reject) => {
      let err = '';
      p.stderr?.on('data', (d: Buffer) => {
        err += d.toString();
        if (err.includes('serving on')) resolve();
      });
      p.once('exit', () => reject(new Error(`virt-api exited: ${err}`)));
    });
    return p;
  };
  /** Points the webhooks at `port` and waits until the API server calls them there. */
  const hookTo = async (port: number, probe: string) => {
    const hooks = virtApiComponents({
      namespace: 'kubevirt',
      image: 'x',
      caBundle: readFileSync(ca.cert, 'utf8'),
      webhookUrl: `https://127.0.0.1:${port}`,
    }).filter((o) => String(o.kind).endsWith('WebhookConfiguration'));
    const file = join(cp.dir, `hooks-${port}.json`);
    writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: hooks }));
    await run(kubectl, ['--kubeconfig', cp.kubeconfigPath, 'apply', '-f', file]);
    // The API server picks up webhook configurations from its informer: wait until one answers.
    for (let i = 0; ; i++) {
      const o = await client.create(VirtualMachineInstanceType, vmi(probe, i)).catch(() => undefined);
      if ((o as { spec?: { domain?: { machine?: unknown } } } | undefined)?.spec?.domain?.machine) break;
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const rssMiB = (p: ChildProcess) =>
    Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p.pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

  const port = 20_000 + (process.pid % 20_000);
  api = await startApi([cli, ...flags(port)]);
  await hookTo(port, 'probe');
  const hooked = await creates(client, 'hooked');
  const rss = rssMiB(api);
  api.kill('SIGTERM');

  // The same server through the whole command tree, as `kubevirt-ts virt-api` ran before.
  const program = /import\("(\.\.\/program-[A-Z0-9]+\.js)"\)/.exec(readFileSync(cli, 'utf8'))?.[1];
  if (!program) throw new Error(`${cli}: no program chunk import found`);
  const programUrl = new URL(program, `file://${cli}`).href;
  api = await startApi([
    '--input-type=module',
    '-e',
    `const { buildProgram } = await import(${JSON.stringify(programUrl)}); await buildProgram().parseAsync(process.argv.slice(1), { from: 'user' });`,
    ...flags(port + 1),
  ]);
  await hookTo(port + 1, 'probe-full');
  await creates(client, 'hooked-full');
  const rssFull = rssMiB(api);
  client.close();
  console.log(
    `BENCH virt-api admission_p50_ms=${pct(hooked, 50).toFixed(1)} admission_p99_ms=${pct(hooked, 99).toFixed(1)} create_no_webhook_p50_ms=${pct(plain, 50).toFixed(1)} rss_mib=${rss.toFixed(0)} rss_full_cli_mib=${rssFull.toFixed(0)}`,
  );
} finally {
  api?.kill('SIGTERM');
  await cp.stop();
}
