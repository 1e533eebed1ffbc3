/**
 * `npm run bench:virt-api`: VMI creates through a real kube-apiserver with and without
 * virt-api's admission webhooks, side by side in one run. virt-api runs as its own process
 * (`kubevirt-ts virt-api` from dist/, its own bundle dist/cli/virt-api.js) with its
 * mutating and validating configurations registered for the whole run, carrying an
 * objectSelector on the label {@link KIND_LABEL}: `virt-api` objects go through them,
 * `plain` ones through no webhook (the same request to the same API server, which matches
 * the rules and calls nothing), `null` ones through a copy of the configurations pointed at
 * a null webhook (a bare node:http2 server in its own process that allows everything, no
 * patch): the cost of the webhook calls themselves, API server side included, that no
 * webhook server can avoid. Rounds of the three alternate (after one unmeasured warm-up
 * round of each), at 1 client and at 50 concurrent clients, so load from the rest of the
 * machine falls on all alike. Added latency: a percentile minus the plain one.
 *
 * CPU: virt-api's, the null webhook's and kube-apiserver's user+system time
 * (/proc/<pid>/stat, the getrusage figure process.cpuUsage() reads) over the measured
 * 50-client rounds, per admission review (two a create: the VMI's mutating and validating
 * webhooks) and per create.
 *
 * Then the same creates once more with the webhooks served by a virt-api started through
 * the whole command tree (dist's program chunk: every command and, through virtctl,
 * @kubernetes/client-node; what `kubevirt-ts virt-api` loaded before it had its own
 * bundle), for the memory it costs.
 *
 * Ends with `BENCH virt-api admission_p50_ms= admission_p99_ms= create_no_webhook_p50_ms=
 * added_p50_ms= added_p95_ms= null_added_p50_ms= added_c1_p50_ms= added_c1_p95_ms=
 * null_added_c1_p50_ms= cpu_ms_per_review= null_cpu_ms_per_review=
 * apiserver_cpu_ms_per_create= apiserver_cpu_ms_per_null_create=
 * apiserver_cpu_ms_per_plain_create= failed_creates= load1= rss_mib= rss_full_cli_mib=` (admission_*: virt-api
 * creates at 50 clients; added_*: at 50 clients unless c1; failed_creates: creates the API
 * server refused because a webhook call failed, left out of the latencies; load1: the 1-minute load average
 * after the measured rounds; rss: the virt-api process's resident memory after its run).
 * Environment: BENCH_VIRTAPI_DIST (another build's dist/ to take virt-api from, to compare
 * builds; default this tree's), BENCH_VIRTAPI_CREATES (a 50-client round, default 300), BENCH_VIRTAPI_ROUNDS
 * (measured rounds of each kind per concurrency, default 3), BENCH_VIRTAPI_NODE_ARGS (node
 * flags for virt-api, e.g. `--cpu-prof`, or `--import ./bench/virt-api-diag.mjs`, which
 * prints `DIAG {json}` lines (connections by ALPN protocol...), the last of which is
 * reported).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join, resolve as resolvePath } from 'node:path';
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
/** Which webhooks an object goes through (the configurations' objectSelector): see {@link Kind}. */
const KIND_LABEL = 'bench.kubevirt-ts/webhooks';
type Kind = 'plain' | 'virt-api' | 'null';
const KINDS: readonly Kind[] = ['plain', 'virt-api', 'null'];

/** The null webhook: allows every AdmissionReview, no patch (run with `node -e`, cert and key files as arguments). */
const NULL_WEBHOOK = `
const http2 = require('node:http2');
const fs = require('node:fs');
const [cert, key] = process.argv.slice(1);
let called = false;
const s = http2.createSecureServer({ cert: fs.readFileSync(cert), key: fs.readFileSync(key), allowHTTP1: true });
s.on('request', (req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const uid = JSON.parse(Buffer.concat(chunks).toString()).request.uid;
    const body = JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, allowed: true } });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
    if (!called) { called = true; console.log('called'); }
  });
});
s.listen(0, '127.0.0.1', () => console.log('port ' + s.address().port));
`;
const cli = resolvePath(
  process.env.BENCH_VIRTAPI_DIST ?? join(import.meta.dirname, '..', 'dist'),
  'cli',
  'kubevirt-ts.js',
);
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

function vmi(prefix: string, i: number, kind: Kind): KubeObject {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: {
      name: `${prefix}-${i}`,
      namespace: 'default',
      // Every kind carries the label: the objects differ only in its value.
      labels: { [KIND_LABEL]: kind },
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

/** Creates the API server refused (a webhook call that failed: failurePolicy Fail), with the first error. */
const failed = { count: 0, first: '' };

/** `n` creates by `clients` concurrent clients; the latencies in ms of those that succeeded. */
async function creates(client: KubeClient, prefix: string, n: number, clients: number, kind: Kind) {
  const lat: number[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      for (let i = next++; i < n; i = next++) {
        const t = performance.now();
        try {
          await client.create(VirtualMachineInstanceType, vmi(prefix, i, kind));
          lat.push(performance.now() - t);
        } catch (e) {
          failed.count++;
          failed.first ||= (e as Error).message;
        }
      }
    }),
  );
  return lat;
}

const cp = await startControlPlane({ controllerManager: false, scheduler: false });
const kubectl = join(kubeBinDir, 'kubectl');
let api: ReturnType<typeof spawn> | undefined;
let nullHook: ReturnType<typeof spawn> | undefined;
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
  /** Registers the webhooks at `port` for objects labelled `kind` (names suffixed `suffix`). */
  const register = async (port: number, kind: Kind, suffix = '') => {
    const hooks = virtApiComponents({
      namespace: 'kubevirt',
      image: 'x',
      caBundle: readFileSync(ca.cert, 'utf8'),
      webhookUrl: `https://127.0.0.1:${port}`,
    })
      .filter((o) => String(o.kind).endsWith('WebhookConfiguration'))
      .map((o) => ({
        ...o,
        metadata: { ...(o.metadata as object), name: `${(o.metadata as { name: string }).name}${suffix}` },
        webhooks: (o.webhooks as Record<string, unknown>[]).map((w) => ({
          ...w,
          objectSelector: { matchExpressions: [{ key: KIND_LABEL, operator: 'In', values: [kind] }] },
        })),
      }));
    const file = join(cp.dir, `hooks-${port}.json`);
    writeFileSync(file, JSON.stringify({ apiVersion: 'v1', kind: 'List', items: hooks }));
    await run(kubectl, ['--kubeconfig', cp.kubeconfigPath, 'apply', '-f', file]);
  };
  /** Waits until the API server calls virt-api's webhooks (from its informer): a probe gets defaults. */
  const untilDefaulted = async (probe: string) => {
    for (let i = 0; ; i++) {
      const o = await client
        .create(VirtualMachineInstanceType, vmi(probe, i, 'virt-api'))
        .catch(() => undefined);
      if ((o as { spec?: { domain?: { machine?: unknown } } } | undefined)?.spec?.domain?.machine) break;
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const rssMiB = (p: ChildProcess) =>
    Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${p.pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;

  const port = 20_000 + (process.pid % 20_000);
  api = await startApi([cli, ...flags(port)]);
  const apiPid = api.pid as number;
  await register(port, 'virt-api');
  await untilDefaulted('probe');

  nullHook = spawn(process.execPath, ['-e', NULL_WEBHOOK, serving.cert, serving.key], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let nullOut = '';
  const nullSaid = (what: RegExp) =>
    new Promise<RegExpExecArray>((resolve) => {
      const check = () => {
        const m = what.exec(nullOut);
        if (m) resolve(m);
        return m;
      };
      if (!check()) nullHook?.stdout?.on('data', () => check());
    });
  nullHook.stdout?.on('data', (d: Buffer) => {
    nullOut += d.toString();
  });
  const nullPort = Number((await nullSaid(/port (\d+)/))[1]);
  const nullPid = nullHook.pid as number;
  await register(nullPort, 'null', '-null');
  // Until the API server calls the null webhook: it says so once.
  const called = nullSaid(/called/);
  for (let i = 0, done = false; !done; i++) {
    await client.create(VirtualMachineInstanceType, vmi('probe-null', i, 'null')).catch(() => undefined);
    done = await Promise.race([
      called.then(() => true),
      new Promise<boolean>((r) => setTimeout(() => r(false), 200)),
    ]);
  }
  const load0 = loadavg();

  /** Alternating rounds of every kind at `clients`: latencies by kind and CPU over the measured rounds. */
  const compare = async (tag: string, n: number, clients: number) => {
    const lat: Record<Kind, number[]> = { plain: [], 'virt-api': [], null: [] };
    const cpu = {
      api: 0,
      nullHook: 0,
      apiserver: { plain: 0, 'virt-api': 0, null: 0 } as Record<Kind, number>,
      creates: 0,
    };
    for (let r = 0; r <= ROUNDS; r++) {
      for (const kind of KINDS) {
        const [s0, n0, a0] = [cpuMs(apiPid), cpuMs(nullPid), cpuMs(apiserverPid)];
        const l = await creates(client, `${tag}-${kind}-${r}`, n, clients, kind);
        const [s1, n1, a1] = [cpuMs(apiPid), cpuMs(nullPid), cpuMs(apiserverPid)];
        // Round 0 warms every path up (connections, JIT) and is not counted.
        if (r === 0) continue;
        lat[kind].push(...l);
        cpu.apiserver[kind] += a1 - a0;
        if (kind === 'virt-api') cpu.api += s1 - s0;
        if (kind === 'null') cpu.nullHook += n1 - n0;
      }
      if (r > 0) cpu.creates += n;
    }
    return { lat, cpu };
  };
  const c1 = await compare('c1', N1, 1);
  const c50 = await compare('c50', N, CLIENTS);
  const load1 = loadavg();
  const hookedDiag = diag;
  const rss = rssMiB(api);
  api.kill('SIGTERM');
  nullHook.kill('SIGTERM');

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
  await register(port + 1, 'virt-api');
  await untilDefaulted('probe-full');
  await creates(client, 'hooked-full', N, CLIENTS, 'virt-api');
  const rssFull = rssMiB(api);
  client.close();
  const ms = (x: number) => x.toFixed(1);
  const http = /"chosen":\{([^}]*)\}/.exec(hookedDiag)?.[1] ?? '';
  if (hookedDiag) console.error(`virt-api diagnostics after the measured rounds: ${hookedDiag}`);
  const line = (c: typeof c1, n: number) =>
    KINDS.map((k) => `${k} p50 ${ms(pct(c.lat[k], 50))} p95 ${ms(pct(c.lat[k], 95))}`).join(', ') +
    ` (${c.lat.plain.length} creates each, ${n} a round)`;
  console.error(
    `load average ${load0.map((l) => l.toFixed(2)).join(' ')} before, ${load1.map((l) => l.toFixed(2)).join(' ')} after\n` +
      `1 client: ${line(c1, N1)}\n50 clients: ${line(c50, N)}` +
      (http ? `\nvirt-api's webhook connections by ALPN: ${http}` : ''),
  );
  if (failed.count) console.error(`${failed.count} creates failed, the first: ${failed.first}`);
  const added = (c: typeof c1, k: Kind, p: number) => ms(pct(c.lat[k], p) - pct(c.lat.plain, p));
  const per = (x: number, n: number) => (x / n).toFixed(2);
  console.log(
    [
      'BENCH virt-api',
      `admission_p50_ms=${ms(pct(c50.lat['virt-api'], 50))}`,
      `admission_p99_ms=${ms(pct(c50.lat['virt-api'], 99))}`,
      `create_no_webhook_p50_ms=${ms(pct(c50.lat.plain, 50))}`,
      `added_p50_ms=${added(c50, 'virt-api', 50)}`,
      `added_p95_ms=${added(c50, 'virt-api', 95)}`,
      `null_added_p50_ms=${added(c50, 'null', 50)}`,
      `added_c1_p50_ms=${added(c1, 'virt-api', 50)}`,
      `added_c1_p95_ms=${added(c1, 'virt-api', 95)}`,
      `null_added_c1_p50_ms=${added(c1, 'null', 50)}`,
      `cpu_ms_per_review=${per(c50.cpu.api, 2 * c50.cpu.creates)}`,
      `null_cpu_ms_per_review=${per(c50.cpu.nullHook, 2 * c50.cpu.creates)}`,
      `apiserver_cpu_ms_per_create=${per(c50.cpu.apiserver['virt-api'], c50.cpu.creates)}`,
      `apiserver_cpu_ms_per_null_create=${per(c50.cpu.apiserver.null, c50.cpu.creates)}`,
      `apiserver_cpu_ms_per_plain_create=${per(c50.cpu.apiserver.plain, c50.cpu.creates)}`,
      `failed_creates=${failed.count}`,
      `load1=${load1[0]?.toFixed(2)}`,
      `rss_mib=${rss.toFixed(0)}`,
      `rss_full_cli_mib=${rssFull.toFixed(0)}`,
    ].join(' '),
  );
} finally {
  api?.kill('SIGTERM');
  nullHook?.kill('SIGTERM');
  await cp.stop();
}
