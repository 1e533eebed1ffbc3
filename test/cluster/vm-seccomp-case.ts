/**
 * The launcher under containerd's RuntimeDefault seccomp profile on the real one-node
 * cluster, registered by test/cluster/vm-tiny.test.ts after its other cases (same
 * namespace). vm-tiny's own VM runs under upstream's kubevirt/kubevirt.json (the default
 * with the KubevirtSeccompProfile gate on); here the KubeVirt CR asks for
 * `runtimeDefaultProfile` (what the pods get with the gate off): the launcher's libvirtd,
 * virtlogd and QEMU (TCG) still start and the tiny guest boots, every process of compute
 * filtered. The CR is restored afterwards.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { expect, it } from 'vitest';
import { patchKubeVirtArgs } from '../support/cluster-pods';
import { type ClusterVmContext, deleteVm, startVm, vmManifest } from './vm-network-cases';

const MARKER = 'KUBEVIRT-TS-GUEST-BOOTED';

function patchSeccomp(c: ClusterVmContext, seccompConfiguration: unknown): void {
  c.kubectl(...patchKubeVirtArgs({ spec: { configuration: { seccompConfiguration } } }));
}

/** A process's seccomp mode and filter count, or undefined when it is gone. */
export function seccompOf(pid: number | string): { mode?: string; filters: number } | undefined {
  try {
    const st = readFileSync(`/proc/${pid}/status`, 'utf8');
    return {
      mode: /^Seccomp:\t(\d+)$/m.exec(st)?.[1],
      filters: Number(/^Seccomp_filters:\t(\d+)$/m.exec(st)?.[1]),
    };
  } catch {
    return undefined;
  }
}

/** Seccomp mode of every process of QEMU's compute container (its memory cgroup, v1). */
export function computeSeccompModes(qemuPid: number): Array<[string, string | undefined]> {
  const mem = readFileSync(`/proc/${qemuPid}/cgroup`, 'utf8')
    .split('\n')
    .find((l) => /^\d+:memory:/.test(l))
    ?.split(':')[2];
  const procs = readFileSync(`/sys/fs/cgroup/memory${mem}/cgroup.procs`, 'utf8').split('\n').filter(Boolean);
  return procs.flatMap((pid): Array<[string, string | undefined]> => {
    const s = seccompOf(pid);
    return s ? [[pid, s.mode]] : []; // gone since the listing
  });
}

/** Registers the case; `ctx` is read when it runs. */
export function registerSeccompCase(ctx: () => ClusterVmContext): void {
  it("boots the tiny guest under containerd's RuntimeDefault seccomp profile (the KubeVirt CR's runtimeDefaultProfile)", async () => {
    const c = ctx();
    const name = 'vm-seccomp-rd';
    patchSeccomp(c, { virtualMachineInstanceProfile: { customProfile: { runtimeDefaultProfile: true } } });
    try {
      // virt-controller follows the CR through its informer: give it a moment.
      await new Promise((r) => setTimeout(r, 3_000));
      const vm = await startVm(
        c,
        name,
        vmManifest(name, c.namespace, [{ name: 'default', masquerade: {} }], [{ name: 'default', pod: {} }]),
      );
      try {
        expect(vm.launcher.spec?.securityContext?.seccompProfile).toEqual({ type: 'RuntimeDefault' });
        await vm.con.waitFor(MARKER, 180_000);
        const qemuPid = Number(
          execFileSync('pgrep', ['-f', `guest=${c.namespace}_${name},`], { encoding: 'utf8' }).trim(),
        );
        const modes = computeSeccompModes(qemuPid);
        expect(modes.length).toBeGreaterThanOrEqual(3);
        for (const [pid, mode] of modes) expect(mode, `Seccomp of pid ${pid} in compute`).toBe('2');
      } finally {
        vm.con.close();
        await deleteVm(c, name);
      }
    } finally {
      patchSeccomp(c, null);
    }
  }, 600_000);
}
