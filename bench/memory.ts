/** Process memory as the benches report it, from /proc/PID/smaps_rollup. */
import { readFileSync } from 'node:fs';

/** A process's memory, in MiB. */
export interface Memory {
  /** Resident set, including the pages of /usr/bin/node every Node process shares. */
  rss: number;
  /** Proportional set size: shared pages divided among the processes that map them. */
  pss: number;
  /** Private (unshared) pages: what this one process adds to the host. */
  uss: number;
}

export function memoryOf(pid: number): Memory {
  const r = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(r)?.[1] ?? Number.NaN);
  return {
    rss: kb('Rss') / 1024,
    pss: kb('Pss') / 1024,
    uss: (kb('Private_Clean') + kb('Private_Dirty')) / 1024,
  };
}

export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
