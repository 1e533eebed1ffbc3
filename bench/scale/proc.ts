/**
 * Processes of the scale benchmark: its parts run as `node --import tsx` children (not
 * through the tsx CLI, which would put a second process between us and the one whose
 * memory we read), their RSS read from /proc, and kube-apiserver found by its port.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createInterface, type Interface } from 'node:readline';

/** A child running one of bench/scale/*-main.ts. */
export interface Part {
  name: string;
  proc: ChildProcess;
  /** Its stdout lines after `ready`. */
  lines: Interface;
}

/** Lines a part prints for the benchmark to parse, not to show: `counts {json}`. */
const COUNTS = 'counts ';

/**
 * The request counts of a part that answers SIGUSR2 with a `counts {json}` line on stdout
 * (controller-main.ts): requests by `method resource` since it started.
 */
export function requestCounts(p: Part, timeoutMs = 30_000): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      p.lines.off('line', onLine);
      reject(new Error(`${p.name}: no counts after ${timeoutMs} ms`));
    }, timeoutMs);
    const onLine = (line: string) => {
      if (!line.startsWith(COUNTS)) return;
      clearTimeout(timer);
      p.lines.off('line', onLine);
      resolve(JSON.parse(line.slice(COUNTS.length)));
    };
    p.lines.on('line', onLine);
    p.proc.kill('SIGUSR2');
  });
}

/**
 * Starts `script` with `args` and resolves once it prints `ready` on stdout; its stderr and
 * other output go to ours, prefixed with `name`.
 */
export async function startPart(
  name: string,
  script: string,
  args: string[],
  nodeFlags: string[] = [],
  readyTimeoutMs = 120_000,
): Promise<Part> {
  const proc = spawn(process.execPath, [...nodeFlags, '--import', 'tsx', script, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const prefix = (line: string) => process.stderr.write(`[${name}] ${line}\n`);
  createInterface({ input: proc.stderr! }).on('line', prefix);
  const lines = createInterface({ input: proc.stdout! });
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`${name}: not ready after ${readyTimeoutMs} ms`)),
        readyTimeoutMs,
      );
      proc.once('exit', (code) => reject(new Error(`${name} exited with ${code} before ready`)));
      lines.on('line', (line) => {
        if (line === 'ready') {
          clearTimeout(timer);
          resolve();
        } else if (!line.startsWith(COUNTS)) prefix(line);
      });
    });
  } catch (err) {
    // Not ready: it is not handed back, so it must not outlive this.
    proc.kill('SIGKILL');
    throw err;
  }
  return { name, proc, lines };
}

/** SIGTERM, SIGKILL after `graceMs`; resolves when it has exited. */
export async function stopPart(p: Part, graceMs = 10_000): Promise<void> {
  const { proc } = p;
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  proc.kill('SIGTERM');
  const killer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(killer);
}

/** VmRSS and VmHWM (peak) of `pid` in MiB, from /proc/<pid>/status; 0 when unreadable. */
export function rssMb(pid: number | undefined): { rss: number; peak: number } {
  if (!pid) return { rss: 0, peak: 0 };
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
    return { rss: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 };
  } catch {
    return { rss: 0, peak: 0 };
  }
}

/** The pid of this machine's kube-apiserver listening on `port` (by its command line). */
export function apiserverPid(port: string): number | undefined {
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0');
      if (argv[0]?.endsWith('/kube-apiserver') && argv.includes(`--secure-port=${port}`)) return Number(d);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on Linux's usual builds). */
const USER_HZ = 100;

/** CPU seconds (user + system) `pid` has used so far, from /proc/<pid>/stat; 0 when unreadable. */
export function cpuSeconds(pid: number | undefined): number {
  if (!pid) return 0;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command (which may hold spaces) in parentheses: utime is the 14th, stime the 15th.
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / USER_HZ;
  } catch {
    return 0;
  }
}

/** The whole host's busy and total CPU seconds so far (all cores, every process), from /proc/stat. */
export function hostCpu(): { busy: number; total: number } {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const total = cpu.reduce((a, b) => a + b, 0);
  // idle and iowait are not busy.
  return { busy: (total - cpu[3] - (cpu[4] ?? 0)) / USER_HZ, total: total / USER_HZ };
}
