/**
 * How a launcher pod's guest is isolated, as the host sees it (vm-tiny.test.ts's boot
 * case): QEMU runs as user 107 inside the compute container's memory cgroup of the pod;
 * the pod runs under upstream's seccomp profile, which virt-handler installed in the
 * kubelet's directory, with every process of compute filtered; virt-handler's phase 1
 * built the masquerade bridge, tap and NAT in the pod's network namespace.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { expect } from 'vitest';
import type { ClusterInfo } from '../../scripts/cluster/state';
import { computeSeccompModes, seccompOf } from './vm-seccomp-case';

/** Asserts the launcher pod's isolation; returns its QEMU's pid. */
export function expectLauncherIsolation(o: {
  info: ClusterInfo;
  launcher: V1Pod;
  /** The compute container's `containerd://<id>`. */
  containerId: string;
  /** The domain's name, `<namespace>_<vmi>`, in QEMU's `-name guest=` argument. */
  qemuGuest: string;
  podIP: string;
  /** The guest port the masquerade NAT forwards. */
  guestPort: number;
}): number {
  // QEMU on the host: user 107, in the compute container's memory cgroup of this pod.
  const pids = execFileSync('pgrep', ['-f', `guest=${o.qemuGuest},`], { encoding: 'utf8' })
    .trim()
    .split('\n');
  expect(pids).toHaveLength(1);
  const qemuPid = Number(pids[0]);
  expect(readFileSync(`/proc/${qemuPid}/status`, 'utf8')).toMatch(/^Uid:\t107\t107\t107\t107$/m);
  const memLine = readFileSync(`/proc/${qemuPid}/cgroup`, 'utf8')
    .split('\n')
    .find((l) => /^\d+:memory:/.test(l));
  const memPath = memLine?.split(':')[2] ?? '';
  expect(memPath).toMatch(
    new RegExp(
      `^/kubepods(/(burstable|besteffort))?/pod${o.launcher.metadata?.uid}/${o.containerId.slice('containerd://'.length)}$`,
    ),
  );
  expect(readFileSync(`/sys/fs/cgroup/memory${memPath}/cgroup.procs`, 'utf8').split('\n')).toContain(
    String(qemuPid),
  );

  // Seccomp: the pod runs under upstream's profile, which virt-handler installed in the
  // kubelet's seccomp directory; every process of compute (launcher, libvirtd, virtlogd,
  // QEMU) is filtered (mode 2), QEMU by the pod's filter and its own -sandbox one.
  expect(o.launcher.spec?.securityContext?.seccompProfile).toEqual({
    type: 'Localhost',
    localhostProfile: 'kubevirt/kubevirt.json',
  });
  const profile = JSON.parse(
    readFileSync(join(o.info.stateDir, 'kubelet', 'seccomp', 'kubevirt', 'kubevirt.json'), 'utf8'),
  ) as { defaultAction: string };
  expect(profile.defaultAction).toBe('SCMP_ACT_ERRNO');
  const modes = computeSeccompModes(qemuPid);
  expect(modes.length).toBeGreaterThanOrEqual(3);
  for (const [pid, mode] of modes) expect(mode, `Seccomp of pid ${pid} in compute`).toBe('2');
  expect(seccompOf(qemuPid)?.filters).toBeGreaterThanOrEqual(2);

  // Phase 1 ran in the pod's network namespace (QEMU's): the bridge, the tap, the NAT.
  const inPod = (cmd: string, ...args: string[]) =>
    execFileSync('nsenter', [`--net=/proc/${qemuPid}/ns/net`, '--', cmd, ...args], { encoding: 'utf8' });
  const links = JSON.parse(inPod('ip', '-j', 'addr', 'show')) as {
    ifname: string;
    master?: string;
    addr_info?: { family: string; local: string; prefixlen: number }[];
  }[];
  const byName = new Map(links.map((l) => [l.ifname, l]));
  expect(byName.get('eth0')?.addr_info?.find((a) => a.family === 'inet')?.local).toBe(o.podIP);
  expect(byName.get('k6t-eth0')?.addr_info?.find((a) => a.family === 'inet')).toMatchObject({
    local: '10.0.2.1',
    prefixlen: 24,
  });
  expect(byName.get('tap0')?.master).toBe('k6t-eth0');
  const nat = inPod('nft', 'list', 'table', 'ip', 'kubevirt_nat');
  expect(nat).toMatch(
    new RegExp(`tcp dport ${o.guestPort} (counter packets \\d+ bytes \\d+ )?dnat to 10\\.0\\.2\\.2`),
  );
  return qemuPid;
}
