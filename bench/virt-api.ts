/**
 * `npm run bench:virt-api`: VMI creates through a real kube-apiserver with and without
 * virt-api's admission webhooks, side by side in one run. virt-api runs as its own process
 * (`kubevirt-ts virt-api` from dist/, its own bundle dist/cli/virt-api.js) with its
 * mutating and validating configurations registered for the whole run; they carry an
 * objectSelector that skips objects labelled {@link SKIP_LABEL}, so a "plain" create is
 * the same request to the same API server, which matches the webhooks' rules and then
 * calls none of them. Rounds alternate plain and hooked (after one unmeasured warm-up
 * round of each), at 1 client and at 50 concurrent clients, so load from the rest of the
 * machine falls on both alike. Added latency: hooked percentile minus plain percentile.
 *
 * CPU: virt-api's and kube-apiserver's user+system time (/proc/<pid>/stat, the
 * getrusage figure process.cpuUsage() reads) over the measured 50-client rounds, per
 * admission review (two a create: the VMI's mutating and validating webhooks) and per create.
 *
 * Then the same creates once more with the webhooks served by a virt-api started through
 * the whole command tree (dist's program chunk: every command and, through virtctl,
 * @kubernetes/client-node; what `kubevirt-ts virt-api` loaded before it had its own
 * bundle), for the memory it costs.
 *
 * Ends with `BENCH virt-api admission_p50_ms= admission_p99_ms= create_no_webhook_p50_ms=
 * added_p50_ms= added_p95_ms= added_c1_p50_ms= added_c1_p95_ms= cpu_ms_per_review=
 * apiserver_cpu_ms_per_create= apiserver_cpu_ms_per_plain_create= http=
 * rss_mib= rss_full_cli_mib=` (admission_*: hooked creates at 50 clients; added_*: at 50
 * clients unless c1; http: the protocol the API server's webhook calls used, as virt-api
 * saw it; rss: the virt-api process's resident memory after its run). Environment:
 * BENCH_VIRTAPI_CREATES (a 50-client round, default 300), BENCH_VIRTAPI_ROUNDS (measured
 * rounds of each kind per concurrency, default 3), BENCH_VIRTAPI_NODE_ARGS (node flags for
 * virt-api, e.g. `--cpu-prof`, or `--import` of a diagnostic module that prints `DIAG {json}`
 * lines, the last of which is reported).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { crdsDir } from '../scripts/gen-crds';
import { KubeClient } from '../src/controllers/runtime/kube/client';
import { VirtualMachineInstanceType } from '../src/controllers/runtime/resources';
import type { KubeObject } from '../src/controllers/runtime/types';
import { virtApiComponents } from '../src/controllers/virt-operator/components/virt-api';
import { kubeBinDir, startControlPlane } from '../test/support/kube';
import { issue, makeCa } from '../test/support/tls-certs';

const N = Number(process.env.BENCH_VIRTAPI_CREATES ?? 300);
const ROUNDS = Number(process.env.BENCH_VIRTAPI_ROUNDS ?? 3);
const N1 = 40;
const CLIENTS = 50;
/** Objects with this label are skipped by the webhooks (the configurations' objectSelector). */
const SKIP_LABEL = 'bench.kubevirt-ts/webhooks';
const cli = join(import.meta.dirname, '..', 'dist', 'cli', 'kubevirt-ts.js');
if (!existsSync(cli)) throw new Error(`${cli} missing: npm run build first`);
const nodeArgs = (process.env.BENCH_VIRTAPI_NODE_ARGS ?? '').split(' ').filter(Boolean);

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

/** A process's user+system CPU time in ms (clock ticks of 10 ms). */
const cpuMs = (pid: number) => {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(f[11]) + Number(f[12])) * 10;
};

function vmi(prefix: string, i: number, plain = false): KubeObject {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: {
      name: `${prefix}-${i}`,
      namespace: 'default',
      // Both kinds carry a label of the same size: the objects differ only in its value.
      labels: { [SKIP_LABEL]: plain ? 'skip' : 'call' },
    },
    spec: {
      domain: {
        devices: { disks: [{ name: 'root', disk: {} }] },
        resources: { requests: { memory: '64Mi' } },
      },
      volumes: [{ name: 'root', containerDisk: { image: 'example/tiny' } }],
    },
  } as KubeObject;
}

/** `n` creates by `clients` concurrent clients; their latencies in ms. */
async function creates(client: KubeClient, prefix: string, n: number, clients: number, plain: boolean) {
  const lat: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let i = next++; i < n; i = next++) {
        const t = performance.now();
        await client.create(VirtualMachineInstanceType, vmi(prefix, i, plain));
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
  const apiserverPid = readdirSync('/proc')
    .filter((p) => /^\d+$/.test(p))
    .map(Number)
    .find((p) => {
      try {
        const cmd = readFileSync(`/proc/${p}/cmdline`, 'utf8');
        return cmd.includes('kube-apiserver') && cmd.includes(cp.dir);
      } catch {
        return false;
      }
    });
  if (!apiserverPid) throw new Error('kube-apiserver process not found');

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
  let diag = '';
  const startApi = async (args: string[]): Promise<ChildProcess> => {
    const p = spawn(process.execPath, [...nodeArgs, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    await new Promise<void>((resolve, reject) => {
      let err = '';
      p.stderr?.on('data', (d: Buffer) => {
        err = (err + d.toString()).slice(-10_000);
        for (const l of d.toString().split('\n')) if (l.startsWith('DIAG ')) diag = l;
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
    })
      .filter((o) => String(o.kind).endsWith('WebhookConfiguration'))
      .map((o) => ({
        ...o,
        webhooks: (o.webhooks as Record<string, unknown>[]).map((w) => ({
          ...w,
          objectSelector: { matchExpressions: [{ key: SKIP_LABEL, operator: 'NotIn', values: ['skip'] }] },
        })),
      }));
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
  const apiPid = api.pid as number;
  await hookTo(port, 'probe');
  const load0 = loadavg();

  /** Alternating plain and hooked rounds at `clients`; returns both latency sets and CPU over hooked rounds. */
  const compare = async (tag: string, n: number, clients: number) => {
    const plain: number[] = [];
    const hooked: number[] = [];
    const cpu = { api: 0, apiserverHooked: 0, apiserverPlain: 0, hookedCreates: 0, plainCreates: 0 };
    for (let r = 0; r <= ROUNDS; r++) {
      // Round 0 warms both paths up (connections, JIT) and is not counted.
      const [s0, a0] = [cpuMs(apiPid), cpuMs(apiserverPid)];
      const p = await creates(client, `${tag}-plain-${r}`, n, clients, true);
      const [s1, a1] = [cpuMs(apiPid), cpuMs(apiserverPid)];
      const h = await creates(client, `${tag}-hooked-${r}`, n, clients, false);
      const [s2, a2] = [cpuMs(apiPid), cpuMs(apiserverPid)];
      if (r === 0) continue;
      plain.push(...p);
      hooked.push(...h);
      cpu.api += s2 - s1 - (s1 - s0);
      cpu.apiserverPlain += a1 - a0;
      cpu.apiserverHooked += a2 - a1;
      cpu.hookedCreates += n;
      cpu.plainCreates += n;
    }
    return { plain, hooked, cpu };
  };
  const c1 = await compare('c1', N1, 1);
  const c50 = await compare('c50', N, CLIENTS);
  const load1 = loadavg();
  const hookedDiag = diag;
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
  await creates(client, 'hooked-full', N, CLIENTS, false);
  const rssFull = rssMiB(api);
  client.close();
  const ms = (x: number) => x.toFixed(1);
  const http = /"chosen":\{([^}]*)\}/.exec(hookedDiag)?.[1] ?? '';
  if (hookedDiag) console.error(`virt-api diagnostics after the measured rounds: ${hookedDiag}`);
  console.error(
    `load average ${load0.map((l) => l.toFixed(2)).join(' ')} before, ${load1.map((l) => l.toFixed(2)).join(' ')} after; ` +
      `1 client: plain p50 ${ms(pct(c1.plain, 50))} p95 ${ms(pct(c1.plain, 95))}, hooked p50 ${ms(pct(c1.hooked, 50))} p95 ${ms(pct(c1.hooked, 95))}; ` +
      `50 clients: plain p50 ${ms(pct(c50.plain, 50))} p95 ${ms(pct(c50.plain, 95))}, hooked p50 ${ms(pct(c50.hooked, 50))} p95 ${ms(pct(c50.hooked, 95))} ms` +
      (http ? `; webhook connections by ALPN: ${http}` : ''),
  );
  console.log(
    [
      'BENCH virt-api',
      `admission_p50_ms=${ms(pct(c50.hooked, 50))}`,
      `admission_p99_ms=${ms(pct(c50.hooked, 99))}`,
      `create_no_webhook_p50_ms=${ms(pct(c50.plain, 50))}`,
      `added_p50_ms=${ms(pct(c50.hooked, 50) - pct(c50.plain, 50))}`,
      `added_p95_ms=${ms(pct(c50.hooked, 95) - pct(c50.plain, 95))}`,
      `added_c1_p50_ms=${ms(pct(c1.hooked, 50) - pct(c1.plain, 50))}`,
      `added_c1_p95_ms=${ms(pct(c1.hooked, 95) - pct(c1.plain, 95))}`,
      `cpu_ms_per_review=${(c50.cpu.api / (2 * c50.cpu.hookedCreates)).toFixed(2)}`,
      `apiserver_cpu_ms_per_create=${(c50.cpu.apiserverHooked / c50.cpu.hookedCreates).toFixed(2)}`,
      `apiserver_cpu_ms_per_plain_create=${(c50.cpu.apiserverPlain / c50.cpu.plainCreates).toFixed(2)}`,
      `load1=${load1[0]?.toFixed(2)}`,
      `rss_mib=${rss.toFixed(0)}`,
      `rss_full_cli_mib=${rssFull.toFixed(0)}`,
    ].join(' '),
  );
} finally {
  api?.kill('SIGTERM');
  await cp.stop();
}
