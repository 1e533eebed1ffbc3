/**
 * One probe attempt against a pod, as kubelet's prober does it (pkg/kubelet/prober):
 * `tcpSocket` succeeds when a TCP connection opens; `httpGet` when the answer's status is
 * 200-399 (HTTPS without certificate checks, as kubelet); `exec` when the command exits 0
 * within the timeout (run in the pod's network namespace with the container's
 * environment). tcp and http go to the probe's `host` or the pod IP, as kubelet's do; the
 * node has no route to local mode's pod network, so for a pod with a network namespace
 * they are made from inside it (a small node process entered with nsenter), where the
 * masquerade binding forwards connections to the pod IP to the guest as it does those
 * arriving from the node. A named port is looked up in the container's ports.
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { PodContainer, PodProbe } from '../../common/pod';

/** The result of one attempt; `message` says why it failed (kubelet's event text). */
export interface ProbeOutcome {
  ok: boolean;
  message: string;
}

/** Where and how a probe reaches the container. */
export interface ProbeTarget {
  /** The pod's IP (the node's loopback when the pod has no network of its own). */
  ip: string;
  container: PodContainer;
  /** An exec probe's command as the host runs it (first word mapped, netns entered). */
  execArgv(command: string[]): string[];
  /** The container's environment. */
  env: NodeJS.ProcessEnv;
  /** The pod's network namespace: tcp and http probes are made from inside it. */
  netns?: string;
}

// tcp or http from inside a network namespace: argv kind host port timeoutMs [url headersJson];
// prints the failure and exits 1, or exits 0.
const NETNS_PROBE = `const [k,h,p,ms,url,hd]=process.argv.slice(1);const fail=(m)=>{process.stdout.write(m);process.exit(1)};
if(k==='tcp'){const s=require('net').connect({host:h,port:+p});s.setTimeout(+ms,()=>fail('dial tcp '+h+':'+p+': i/o timeout'));s.on('connect',()=>process.exit(0));s.on('error',(e)=>fail('dial tcp '+h+':'+p+': '+e.message))}
else{const m=url.startsWith('https')?require('https'):require('http');const r=m.get(url,{headers:JSON.parse(hd),timeout:+ms,rejectUnauthorized:false},(res)=>{res.resume();const c=res.statusCode;c>=200&&c<400?process.exit(0):fail('HTTP probe failed with statuscode: '+c)});r.on('timeout',()=>fail('Get "'+url+'": context deadline exceeded'));r.on('error',(e)=>fail('Get "'+url+'": '+e.message))}`;

function inNetns(netns: string, args: string[]): string[] {
  return ['nsenter', `--net=${netns}`, '--', process.execPath, '-e', NETNS_PROBE, ...args];
}

/** The port number of `port` (a number, a numeric string, or a container port's name). */
export function resolvePort(port: string | number, container: PodContainer): number {
  if (typeof port === 'number') return port;
  if (/^\d+$/.test(port)) return Number(port);
  const named = container.ports?.find((p) => p.name === port);
  if (!named)
    throw new Error(`port ${JSON.stringify(port)} is not a named port of container ${container.name}`);
  return named.containerPort;
}

/** Runs one attempt of `probe` against `target`. */
export async function runProbeAction(probe: PodProbe, target: ProbeTarget): Promise<ProbeOutcome> {
  const timeoutMs = Math.max(1, probe.timeoutSeconds ?? 1) * 1000;
  try {
    if (probe.tcpSocket) {
      const port = resolvePort(probe.tcpSocket.port, target.container);
      const host = probe.tcpSocket.host || target.ip;
      if (target.netns) {
        const argv = inNetns(target.netns, ['tcp', host, String(port), String(timeoutMs)]);
        return await execProbe(argv, { PATH: process.env.PATH }, timeoutMs + 1000, true);
      }
      return await tcpProbe(host, port, timeoutMs);
    }
    if (probe.httpGet) {
      const port = resolvePort(probe.httpGet.port, target.container);
      const req = httpRequest(probe.httpGet, probe.httpGet.host || target.ip, port);
      if (target.netns) {
        const args = ['http', '', '', String(timeoutMs), req.url, JSON.stringify(req.headers)];
        return await execProbe(
          inNetns(target.netns, args),
          { PATH: process.env.PATH },
          timeoutMs + 1000,
          true,
        );
      }
      return await httpProbe(req, probe.httpGet.scheme === 'HTTPS', timeoutMs);
    }
    if (probe.exec) return await execProbe(target.execArgv(probe.exec.command), target.env, timeoutMs);
    return { ok: false, message: 'the probe has no handler' };
  } catch (err) {
    return { ok: false, message: (err as Error).message };
  }
}

function tcpProbe(host: string, port: number, timeoutMs: number): Promise<ProbeOutcome> {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    const done = (o: ProbeOutcome) => {
      sock.destroy();
      resolve(o);
    };
    sock.setTimeout(timeoutMs, () => done({ ok: false, message: `dial tcp ${host}:${port}: i/o timeout` }));
    sock.once('connect', () => done({ ok: true, message: '' }));
    sock.once('error', (e) => done({ ok: false, message: `dial tcp ${host}:${port}: ${e.message}` }));
  });
}

/** kubelet's request of an httpGet probe: URL and headers. */
function httpRequest(
  get: NonNullable<PodProbe['httpGet']>,
  host: string,
  port: number,
): { url: string; headers: Record<string, string> } {
  const secure = get.scheme === 'HTTPS';
  const headers: Record<string, string> = { 'User-Agent': 'kube-probe/kubevirt-ts', Accept: '*/*' };
  for (const h of get.httpHeaders ?? []) headers[h.name] = h.value;
  const path = get.path ? (get.path.startsWith('/') ? get.path : `/${get.path}`) : '/';
  return {
    url: `${secure ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}${path}`,
    headers,
  };
}

function httpProbe(
  { url, headers }: { url: string; headers: Record<string, string> },
  secure: boolean,
  timeoutMs: number,
): Promise<ProbeOutcome> {
  return new Promise((resolve) => {
    const req = (secure ? https : http).get(
      url,
      { headers, timeout: timeoutMs, ...(secure ? { rejectUnauthorized: false } : {}) },
      (res) => {
        res.resume();
        const code = res.statusCode ?? 0;
        resolve(
          code >= 200 && code < 400
            ? { ok: true, message: '' }
            : { ok: false, message: `HTTP probe failed with statuscode: ${code}` },
        );
      },
    );
    req.once('timeout', () => {
      req.destroy();
      resolve({ ok: false, message: `Get "${url}": context deadline exceeded` });
    });
    req.once('error', (e) => resolve({ ok: false, message: `Get "${url}": ${e.message}` }));
  });
}

/** Runs `argv`: exit 0 passes; otherwise its output is the message (`bare`: only the output). */
function execProbe(
  argv: string[],
  env: NodeJS.ProcessEnv,
  timeoutMs: number,
  bare = false,
): Promise<ProbeOutcome> {
  return new Promise((resolve) => {
    const child = spawn(argv[0], argv.slice(1), { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const keep = (b: Buffer) => {
      out = (out + b.toString()).slice(-1024);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve({ ok: false, message: `command timed out after ${timeoutMs / 1000}s` });
    }, timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      resolve({ ok: false, message: e.message });
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve(
        code === 0
          ? { ok: true, message: '' }
          : bare && out.trim()
            ? { ok: false, message: out.trim() }
            : {
                ok: false,
                message: `command exited ${code ?? 'on a signal'}${out.trim() ? `: ${out.trim()}` : ''}`,
              },
      );
    });
  });
}
