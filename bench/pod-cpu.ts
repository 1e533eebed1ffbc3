/**
 * bench:density's CPU figures: a pod's CPU time from its cpuacct cgroup (v1, the
 * kubelet's cgroupfs layout), a process's from /proc, over a window.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The cpuacct cgroup (v1) directory of pod `uid` under the kubelet's kubepods hierarchy. */
export function podCpuacctCgroup(uid: string): string {
  const root = '/sys/fs/cgroup/cpuacct/kubepods';
  for (const dir of [root, join(root, 'burstable'), join(root, 'besteffort')]) {
    if (existsSync(join(dir, `pod${uid}`))) return join(dir, `pod${uid}`);
  }
  throw new Error(`no cpuacct cgroup of pod ${uid} under ${root}`);
}

/** CPU time the cgroup's tasks have used, in nanoseconds (cpuacct.usage). */
export function cgroupCpuNs(cgroup: string): number {
  return Number(readFileSync(join(cgroup, 'cpuacct.usage'), 'utf8'));
}

/** CPU time process `pid` has used (utime + stime of /proc/<pid>/stat), in nanoseconds. */
export function processCpuNs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Clock ticks: 100 a second on Linux x86-64.
  return (Number(f[11]) + Number(f[12])) * 10_000_000;
}

/** The host's busy CPU time (all CPUs, everything but idle and iowait) from /proc/stat, in ns. */
export function hostBusyNs(): number {
  const cpu = readFileSync('/proc/stat', 'utf8').split('\n')[0].split(/\s+/).slice(1).map(Number);
  const total = cpu.slice(0, 8).reduce((a, b) => a + b, 0);
  return (total - cpu[3] - cpu[4]) * 10_000_000;
}

/**
 * The anonymous resident memory of process `pid` (RssAnon: its heap and private
 * mappings, not the shared library and binary pages VmRSS also counts), in bytes.
 */
export function processRssAnon(pid: number): number {
  const m = /RssAnon:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : Number.NaN;
}

/** MemAvailable of /proc/meminfo, in MiB. */
export function memAvailableMiB(): number {
  const m = /^MemAvailable:\s+(\d+) kB$/m.exec(readFileSync('/proc/meminfo', 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}
