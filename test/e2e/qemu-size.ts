/**
 * The size of the QEMU process running a libvirt domain, read from /proc: its vCPU threads
 * (named `CPU <n>/TCG` or `/KVM` with debug-threads; libvirt starts QEMU with one and plugs
 * the other enabled ones in, so `-smp` alone does not tell) and its `-m` memory size.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** What domain `name`'s QEMU runs with: its vCPU thread count and memory in MiB. */
export interface QemuSize {
  vcpus: number;
  mib: number;
}

/** The size of domain `name`'s QEMU, or undefined when no such QEMU runs. */
export function qemuSize(name: string): QemuSize | undefined {
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let args: string[];
    try {
      args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (!/qemu-system/.test(args[0] ?? '') || !args.some((a) => a.startsWith(`guest=${name},`))) continue;
    const vcpus = readdirSync(`/proc/${pid}/task`).filter((t) => {
      try {
        return /^CPU \d+\/(TCG|KVM)$/.test(readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim());
      } catch {
        return false;
      }
    }).length;
    // `-m 128` (MiB) or `-m size=131072k,...`.
    const m = /^(?:size=)?(\d+)([kMG]?)/.exec(args[args.indexOf('-m') + 1] ?? '');
    const n = Number(m?.[1]);
    const mib = m?.[2] === 'k' ? n / 1024 : m?.[2] === 'G' ? n * 1024 : n;
    return { vcpus, mib };
  }
  return undefined;
}

/** The vCPU thread count of domain `name`'s QEMU, or undefined when no such QEMU runs. */
export function qemuVcpus(name: string): number | undefined {
  return qemuSize(name)?.vcpus;
}
