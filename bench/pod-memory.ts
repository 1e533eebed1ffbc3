/**
 * bench:cluster's memory figures of a launcher pod: its cgroup's working set (the
 * kubelet's definition) and what QEMU has resident of the guest's RAM.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const MiB = 1024 * 1024;

/** The memory cgroup (v1) directory of pod `uid` under the kubelet's kubepods hierarchy. */
export function podMemoryCgroup(uid: string): string {
  const root = '/sys/fs/cgroup/memory/kubepods';
  for (const dir of [root, join(root, 'burstable'), join(root, 'besteffort')]) {
    if (existsSync(join(dir, `pod${uid}`))) return join(dir, `pod${uid}`);
  }
  throw new Error(`no memory cgroup of pod ${uid} under ${root} (${readdirSync(root).join(', ')})`);
}

/** The kubelet's working set of a memory cgroup: usage minus inactive file pages, in bytes. */
export function workingSet(cgroup: string): number {
  const usage = Number(readFileSync(join(cgroup, 'memory.usage_in_bytes'), 'utf8'));
  const inactive = Number(
    /^total_inactive_file (\d+)$/m.exec(readFileSync(join(cgroup, 'memory.stat'), 'utf8'))?.[1] ?? 0,
  );
  return Math.max(0, usage - inactive);
}

/**
 * Resident bytes of QEMU's guest RAM: its one anonymous mapping of the guest's size (to
 * 2 MiB of alignment). Under TCG the guest's pages come in as it touches them.
 */
export function guestResident(qemuPid: number, guestBytes: number): number {
  const smaps = readFileSync(`/proc/${qemuPid}/smaps`, 'utf8').split(/\n(?=[0-9a-f]+-[0-9a-f]+ )/);
  for (const m of smaps) {
    const [range, , , , inode] = m.split('\n')[0].split(/\s+/);
    const [a, b] = range.split('-').map((h) => Number.parseInt(h, 16));
    if (inode !== '0' || b - a < guestBytes || b - a > guestBytes + 2 * MiB) continue;
    return Number(/^Rss:\s+(\d+) kB$/m.exec(m)?.[1] ?? 0) * 1024;
  }
  throw new Error(`no ${guestBytes / MiB} MiB guest RAM mapping in QEMU ${qemuPid}`);
}
