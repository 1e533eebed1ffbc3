/**
 * bench:cluster's timeline of one cluster VM start, in milliseconds after the bench ran
 * `kubectl create`: the API's own timestamps (whole seconds), the CRI log timestamps of
 * every line the launcher pod's containers wrote and of the virt-handler's and
 * virt-controller's lines naming the VM (nanoseconds, stamped by containerd as the line
 * arrives), containerd's sandbox/container steps and the kubelet's sync-loop events for
 * the pod (when the cluster runs with `traceLogs`), the boot marker; and the CPU time each
 * process on the host used from the create to the marker (who competed with the guest).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';

/** CPU seconds (utime + stime) of every process now, by pid, with a label from its command line. */
export type CpuSnapshot = Map<number, { label: string; seconds: number }>;

/** What the timeline is of: the VM's launcher pod on the cluster in `stateDir`. */
export interface TimelineRun {
  stateDir: string;
  namespace: string;
  vmName: string;
  pod: V1Pod;
  /** Epoch ms just before `kubectl create`. */
  t0: number;
  /** Epoch ms the marker showed on the console. */
  marker: number;
  cpuBefore: CpuSnapshot;
  cpuAfter: CpuSnapshot;
}

export interface Line {
  /** The CRI's (or the log's) time stamp, epoch ms. */
  at: number;
  /** The process's own stamp of a JSON line, when it has one. */
  own?: number;
  source: string;
  text: string;
}

const MAX_TEXT = 170;

function label(pid: number): string {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
    const base = (s: string) => s.slice(s.lastIndexOf('/') + 1);
    // node processes: the script and subcommand say which component it is.
    const words = base(argv[0] ?? '') === 'node' ? argv.slice(1, 3).map(base) : [base(argv[0] ?? '')];
    return words.join(' ').slice(0, 60) || `pid ${pid}`;
  } catch {
    return `pid ${pid}`;
  }
}

/** Every process's CPU seconds now. */
export function cpuSnapshot(): CpuSnapshot {
  const out: CpuSnapshot = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(Number(entry), { label: label(Number(entry)), seconds: (Number(f[11]) + Number(f[12])) / 100 });
    } catch {
      // Gone meanwhile.
    }
  }
  return out;
}

/** CPU seconds used between two snapshots, summed by label, largest first (processes that exited are missing). */
export function cpuUsed(before: CpuSnapshot, after: CpuSnapshot, top = 12): [string, number][] {
  const by = new Map<string, number>();
  for (const [pid, a] of after) {
    const used = a.seconds - (before.get(pid)?.seconds ?? 0);
    if (used > 0) by.set(a.label, (by.get(a.label) ?? 0) + used);
  }
  return [...by.entries()].sort((x, y) => y[1] - x[1]).slice(0, top);
}

/**
 * A JSON log line's own time and message (the process's clock, before the pipe and
 * containerd: closer to the event than the CRI stamp), other lines as they are.
 */
export function ownStamp(text: string): { text: string; own?: number } {
  if (!text.startsWith('{')) return { text };
  try {
    const j = JSON.parse(text) as { time?: string; msg?: string; level?: string };
    if (!j.msg) return { text };
    return {
      text: `${j.level === 'info' ? '' : `${j.level}: `}${j.msg}`,
      own: j.time ? Date.parse(j.time) : undefined,
    };
  } catch {
    return { text };
  }
}

/** CRI log lines (`<RFC3339Nano> <stream> <P|F> <text>`) of one container's log directory. */
function criLines(dir: string, source: string, keep: (text: string) => boolean): Line[] {
  if (!existsSync(dir)) return [];
  const out: Line[] = [];
  for (const f of readdirSync(dir).filter((n) => n.endsWith('.log'))) {
    for (const raw of readFileSync(join(dir, f), 'utf8').split('\n')) {
      const m = /^(\S+) (?:stdout|stderr) [PF] (.*)$/.exec(raw);
      if (m && keep(m[2])) out.push({ at: Date.parse(m[1]), source, ...ownStamp(m[2]) });
    }
  }
  return out;
}

/** The CRI logs of every container of the pods in `namespace` whose directory matches. */
export function podLogs(
  stateDir: string,
  match: (dir: string) => boolean,
  keep: (t: string) => boolean,
): Line[] {
  const root = join(stateDir, 'kubelet', 'pod-logs');
  if (!existsSync(root)) return [];
  const out: Line[] = [];
  for (const pod of readdirSync(root).filter(match)) {
    for (const c of readdirSync(join(root, pod))) {
      out.push(
        ...criLines(join(root, pod, c), `${pod.split('_')[1].replace(/-[a-z0-9]{5}$/, '')}/${c}`, keep),
      );
    }
  }
  return out;
}

/** containerd's info lines about the pod's sandbox and containers (ids learnt as they appear). */
export function containerdLines(stateDir: string, podName: string): Line[] {
  const file = join(stateDir, 'logs', 'containerd.log');
  if (!existsSync(file)) return [];
  const ids = new Set<string>([podName]);
  const out: Line[] = [];
  for (const raw of readFileSync(file, 'utf8').split('\n')) {
    const m = /^time="([^"]+)" level=\w+ msg="(.*)"$/.exec(raw);
    if (!m || ![...ids].some((id) => m[2].includes(id))) continue;
    for (const id of m[2].matchAll(/(?:sandbox id|container id|within sandbox) \\"([0-9a-f]{64})\\"/g))
      ids.add(id[1]);
    const text = m[2]
      .replace(/\\"/g, '"')
      .replace(/&(PodSandbox|Container)Metadata\{Name:([^,]+),[^}]*\}/g, '$2')
      .replace(/[0-9a-f]{64}/g, (id) => id.slice(0, 8));
    out.push({ at: Date.parse(m[1]), source: 'containerd', text });
  }
  return out;
}

/** The kubelet's klog lines naming the pod (`I1201 19:40:00.123456 pid file:line] msg`, local time). */
export function kubeletLines(stateDir: string, podName: string, year: number): Line[] {
  const file = join(stateDir, 'logs', 'kubelet.log');
  if (!existsSync(file)) return [];
  const out: Line[] = [];
  for (const raw of readFileSync(file, 'utf8').split('\n')) {
    if (!raw.includes(podName)) continue;
    const m = /^[IWE](\d\d)(\d\d) (\d\d:\d\d:\d\d\.\d+)\s+\d+ ([^\]]+)\] (.*)$/.exec(raw);
    if (!m) continue;
    const at = new Date(`${year}-${m[1]}-${m[2]}T${m[3]}`).getTime();
    out.push({ at, source: `kubelet ${m[4]}`, text: m[5] });
  }
  return out;
}

/** libvirt's lines in the domain's QEMU log (`<date> <time>+0000: starting up ...`), in the pod's libvirt-runtime. */
function qemuLogLines(stateDir: string, podUid: string): Line[] {
  const dir = join(
    stateDir,
    'kubelet',
    'pods',
    podUid,
    'volumes',
    'kubernetes.io~empty-dir',
    'libvirt-runtime',
  );
  const logDir = join(dir, 'cache', 'libvirt', 'qemu', 'log');
  if (!existsSync(logDir)) return [];
  const out: Line[] = [];
  for (const f of readdirSync(logDir).filter((n) => n.endsWith('.log'))) {
    for (const raw of readFileSync(join(logDir, f), 'utf8').split('\n')) {
      const m = /^(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d\.\d+)\+0000: (.*)$/.exec(raw);
      if (m) out.push({ at: Date.parse(`${m[1]}T${m[2]}Z`), source: 'QEMU log', text: m[3] });
    }
  }
  return out;
}

/** The API server's request counters (`apiserver_request_total`) by verb, resource and code. */
export function apiRequestCounts(metricsText: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of metricsText.split('\n')) {
    if (!line.startsWith('apiserver_request_total{')) continue;
    const labels = Object.fromEntries(
      [...line.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]] as [string, string]),
    );
    const key = `${labels.verb} ${labels.resource}${labels.subresource ? `/${labels.subresource}` : ''} ${labels.code}`;
    out.set(key, (out.get(key) ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1)));
  }
  return out;
}

/** Extra marks of the run the bench itself saw. */
export interface BenchMarks {
  /** Epoch ms `kubectl create` returned. */
  created: number;
  /** The VM object (its creationTimestamp). */
  vm?: Record<string, unknown>;
  apiBefore?: Map<string, number>;
  apiAfter?: Map<string, number>;
}

/** The timeline's lines, ready to print. */
export function clusterTimeline(
  run: TimelineRun,
  vmi: Record<string, unknown>,
  marks?: BenchMarks,
): string[] {
  const { pod, t0 } = run;
  const podName = pod.metadata?.name ?? '';
  const uid = pod.metadata?.uid ?? '';
  const rel = (ms: number) => `+${String(Math.round(ms - t0)).padStart(6)} ms`;
  const at = (t: unknown) =>
    typeof t === 'string' || t instanceof Date ? new Date(t).getTime() : Number.NaN;
  const lines: Line[] = [];
  const api = (t: unknown, text: string) => lines.push({ at: at(t), source: 'API (1 s)', text });
  const status = (vmi.status ?? {}) as {
    phaseTransitionTimestamps?: { phase: string; phaseTransitionTimestamp: string }[];
  };
  if (marks) lines.push({ at: marks.created, source: 'bench', text: 'kubectl create returned' });
  const vmMeta = marks?.vm?.metadata as { creationTimestamp?: string } | undefined;
  if (vmMeta) api(vmMeta.creationTimestamp, 'VM created');
  api((vmi.metadata as { creationTimestamp?: string }).creationTimestamp, 'VMI created');
  api(pod.metadata?.creationTimestamp, 'launcher pod created');
  for (const c of pod.status?.conditions ?? []) api(c.lastTransitionTime, `pod ${c.type}=${c.status}`);
  for (const t of status.phaseTransitionTimestamps ?? []) api(t.phaseTransitionTimestamp, `VMI ${t.phase}`);
  const vm = run.vmName;
  lines.push(
    ...podLogs(
      run.stateDir,
      (d) => d.endsWith(`_${uid}`),
      () => true,
    ),
  );
  lines.push(
    ...podLogs(
      run.stateDir,
      (d) => d.startsWith('kubevirt_'),
      (t) => t.includes(`"${vm}"`) || t.includes(`/${vm}`) || t.includes(`_${vm}`),
    ),
  );
  lines.push(...containerdLines(run.stateDir, podName));
  lines.push(...kubeletLines(run.stateDir, podName, new Date(t0).getUTCFullYear()));
  lines.push(...qemuLogLines(run.stateDir, uid));
  lines.push({ at: run.marker, source: 'bench', text: 'boot marker on the serial console' });
  const shown = lines
    .filter((l) => Number.isFinite(l.at) && l.at >= t0 - 2_000 && l.at <= run.marker + 500)
    .sort((a, b) => a.at - b.at);
  // A JSON line's own stamp is printed beside the CRI's: the gap is the log pipe's delay.
  const own = (l: Line) => (l.own === undefined ? '' : `[own ${rel(l.own).trim()}] `);
  const out = shown.map((l) => `${rel(l.at)}  ${l.source.padEnd(28)} ${own(l)}${l.text.slice(0, MAX_TEXT)}`);
  const secs = (run.marker - t0) / 1000;
  out.push(`CPU seconds used from the create to the marker (${secs.toFixed(1)} s of wall time, 2 cores):`);
  for (const [who, s] of cpuUsed(run.cpuBefore, run.cpuAfter))
    out.push(`  ${s.toFixed(2).padStart(7)}  ${who}`);
  if (marks?.apiBefore && marks.apiAfter) {
    const diff = [...marks.apiAfter]
      .map(([k, n]) => [k, n - (marks.apiBefore?.get(k) ?? 0)] as [string, number])
      .filter(([, n]) => n > 0)
      .sort((a, b) => b[1] - a[1]);
    const total = diff.reduce((sum, [, n]) => sum + n, 0);
    out.push(`API requests from the create to the marker: ${total} (verb resource code: count):`);
    for (const [k, n] of diff.slice(0, 12)) out.push(`  ${String(n).padStart(5)}  ${k}`);
  }
  return out;
}
