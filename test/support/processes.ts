/**
 * Daemons known by pid (pid files of detached control planes and of scripts/cluster):
 * checking that a pid still runs what it was started as, and stopping it; and a VM's QEMU
 * found by its command line.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** True when `pid` runs `binary` (a pid file may outlive its process, and pids are reused). */
export function isOurProcess(pid: number, binary: string): boolean {
  if (!Number.isInteger(pid) || pid <= 1) return false;
  try {
    const argv0 = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0];
    return argv0 === binary;
  } catch {
    return false;
  }
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves when the process is gone. */
export async function terminate(pid: number, graceMs = 3_000): Promise<void> {
  const gone = () => {
    try {
      process.kill(pid, 0);
      // A zombie (an exited child of this process not yet reaped) counts as gone.
      return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    } catch {
      return true;
    }
  };
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (!gone()) {
    if (Date.now() > deadline) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Processes whose argv contains `needle` (read from /proc): pid and argv. */
export function processesWith(needle: string): { pid: number; argv: string[] }[] {
  const out: { pid: number; argv: string[] }[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const argv = readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (argv.some((a) => a.includes(needle))) out.push({ pid: Number(d), argv });
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** The command line of VM `ns`/`vm`'s QEMU on this host (arguments joined by spaces), if it runs. */
export function qemuCmdline(ns: string, vm: string): string | undefined {
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    let cmd = '';
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    if (cmd.includes(`guest=${ns}_${vm},`)) return cmd.split('\0').join(' ');
  }
  return undefined;
}
