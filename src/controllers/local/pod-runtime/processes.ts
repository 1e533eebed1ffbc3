/**
 * The pod runtime's container processes: started detached (their own process group, so
 * they outlive a runtime restart), recorded in a pid file with the kernel's start time of
 * the process (so a reused pid is never mistaken for the container), found again after a
 * restart, signalled as a group.
 */
import { spawn } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** What the pid file holds. */
export interface ProcessRecord {
  pid: number;
  /** Field 22 of /proc/<pid>/stat: start time in clock ticks since boot. */
  startTicks: string;
  startedAt: string;
}

const PID_FILE = 'compute.pid';
const LOG_FILE = 'compute.log';

/** The start time of `pid`, or undefined when it does not exist. */
export function processStartTicks(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return rest[19];
  } catch {
    return undefined;
  }
}

/** Whether the recorded process still runs (same pid and start time, not a zombie). */
export function isAlive(rec: ProcessRecord): boolean {
  try {
    const stat = readFileSync(`/proc/${rec.pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return rest[19] === rec.startTicks && rest[0] !== 'Z';
  } catch {
    return false;
  }
}

/** Reads a pod's pid file. */
export async function readProcessRecord(dir: string): Promise<ProcessRecord | undefined> {
  try {
    return JSON.parse(await readFile(join(dir, PID_FILE), 'utf8')) as ProcessRecord;
  } catch {
    return undefined;
  }
}

export async function removeProcessRecord(dir: string): Promise<void> {
  await rm(join(dir, PID_FILE), { force: true });
}

/** A started container process: its record, and its exit when it is our child. */
export interface StartedProcess {
  record: ProcessRecord;
  /** Exit code (128+signal when killed), for processes this runtime started. */
  exit: Promise<number>;
}

/** Starts `argv` detached with `env`, output appended to `<dir>/compute.log`; writes the pid file. */
export async function startProcess(
  dir: string,
  argv: string[],
  env: NodeJS.ProcessEnv,
): Promise<StartedProcess> {
  const log = openSync(join(dir, LOG_FILE), 'a', 0o600);
  const child = spawn(argv[0], argv.slice(1), {
    detached: true,
    stdio: ['ignore', log, log],
    env,
    cwd: dir,
  });
  const exit = new Promise<number>((resolve) => {
    child.once('error', () => resolve(127));
    child.once('exit', (code, signal) => {
      const signals: Record<string, number> = { SIGKILL: 9, SIGTERM: 15, SIGINT: 2 };
      resolve(code ?? 128 + (signal ? (signals[signal] ?? 1) : 1));
    });
  });
  child.unref();
  const pid = child.pid;
  if (pid === undefined) {
    return { record: { pid: -1, startTicks: '', startedAt: new Date().toISOString() }, exit };
  }
  const record: ProcessRecord = {
    pid,
    startTicks: processStartTicks(pid) ?? '',
    startedAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
  };
  await writeFile(join(dir, PID_FILE), JSON.stringify(record), { mode: 0o600 });
  return { record, exit };
}

/** Signals the process group of `rec` (the container and everything it started). */
export function signalGroup(rec: ProcessRecord, signal: NodeJS.Signals): void {
  if (!isAlive(rec)) return;
  try {
    process.kill(-rec.pid, signal);
  } catch {
    try {
      process.kill(rec.pid, signal);
    } catch {
      // Gone meanwhile.
    }
  }
}

/**
 * Signals only the container's main process, as the kubelet's stop signal goes to the
 * container's init: the rest of its group (a launcher's own libvirt daemons) must outlive
 * it while it shuts its guest down.
 */
export function signalMain(rec: ProcessRecord, signal: NodeJS.Signals): void {
  if (!isAlive(rec)) return;
  try {
    process.kill(rec.pid, signal);
  } catch {
    // Gone meanwhile.
  }
}

/**
 * SIGKILLs what is left of an exited container's process group, as a container runtime
 * ends everything in the container with its init. The group id is the exited main
 * process's pid, which Linux does not hand out again while the group has members.
 */
export function killLeftInGroup(rec: ProcessRecord): void {
  if (rec.pid <= 0) return;
  try {
    process.kill(-rec.pid, 'SIGKILL');
  } catch {
    // Nothing left.
  }
}

/** The last `bytes` of a pod's container log (the termination message of a failed container, as kubelet's FallbackToLogsOnError). */
export async function logTail(dir: string, bytes = 2048): Promise<string> {
  try {
    const text = await readFile(join(dir, LOG_FILE), 'utf8');
    return text.slice(-bytes).trim();
  } catch {
    return '';
  }
}
