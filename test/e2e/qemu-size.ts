/**
 * The vCPUs of the QEMU process running a libvirt domain, read from /proc: its vCPU
 * threads (named `CPU <n>/TCG` or `/KVM` with debug-threads; libvirt starts QEMU with one
 * and plugs the other enabled ones in, so `-smp` alone does not tell).
 */
import { readdirSync, readFileSync } from 'node:fs';

/** The vCPU thread count of domain `name`'s QEMU, or undefined when no such QEMU runs. */
export function qemuVcpus(name: string): number | undefined {
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let args: string[];
    try {
      args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (!/qemu-system/.test(args[0] ?? '') || !args.some((a) => a.startsWith(`guest=${name},`))) continue;
    return readdirSync(`/proc/${pid}/task`).filter((t) => {
      try {
        return /^CPU \d+\/(TCG|KVM)$/.test(readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim());
      } catch {
        return false;
      }
    }).length;
  }
  return undefined;
}
