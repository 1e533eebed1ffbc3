/**
 * The node agent's view into a kubelet's launcher container: the container's first
 * process found by its cgroup in a /proc tree (cgroupfs and systemd cgroup names), and the
 * device-ownership step on real device nodes (root: mknod in a temporary directory).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/controllers/common/pod';
import { claimDeviceOwnership } from '../../../src/controllers/virt-handler/isolation/device-ownership';
import {
  computeContainerId,
  containerPid,
  detectLauncherIsolation,
} from '../../../src/controllers/virt-handler/isolation/launcher-process';
import { readResolvConf } from '../../../src/controllers/virt-handler/network/resolv-conf';

const ID = 'a'.repeat(64);
const OTHER = 'b'.repeat(64);
const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'kvts-iso-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A /proc tree: pid -> [cgroup leaf, ppid]. */
function procTree(procs: Record<number, [string, number]>): string {
  const root = tmp();
  for (const [pid, [cgroup, ppid]] of Object.entries(procs)) {
    mkdirSync(join(root, pid));
    writeFileSync(join(root, pid, 'cgroup'), `12:pids:${cgroup}\n11:memory:${cgroup}\n0::/\n`);
    writeFileSync(join(root, pid, 'status'), `Name:\tx\nPid:\t${pid}\nPPid:\t${ppid}\n`);
  }
  mkdirSync(join(root, 'self'));
  return root;
}

const pod = (containerID?: string): Pod => ({
  metadata: { name: 'virt-launcher-x', namespace: 'ns', uid: 'u1' },
  spec: { containers: [] },
  status: { containerStatuses: [{ name: 'compute', ...(containerID ? { containerID } : {}) }] },
});

describe('finding the launcher process', () => {
  it('reads the compute container ID from the pod status, and refuses anything but hex', () => {
    expect(computeContainerId(pod(`containerd://${ID}`))).toBe(ID);
    expect(computeContainerId(pod(`cri-o://${ID}`))).toBe(ID);
    expect(computeContainerId(pod('containerd://../../etc'))).toBeUndefined();
    expect(computeContainerId(pod())).toBeUndefined();
  });

  it("takes the container's first process (its parent outside), cgroupfs names", async () => {
    const proc = procTree({
      // the pause container and another container of the same pod
      50: [`/kubepods/besteffort/podu1/${OTHER}`, 1],
      // the launcher, its libvirtd and QEMU (children in the same cgroup)
      70: [`/kubepods/besteffort/podu1/${ID}`, 40],
      71: [`/kubepods/besteffort/podu1/${ID}`, 70],
      90: [`/kubepods/besteffort/podu1/${ID}`, 71],
      // a process whose path only contains the ID further up is not in it
      95: [`/other/${ID}/child`, 1],
    });
    expect(await containerPid(ID, proc)).toBe(70);
    expect(await detectLauncherIsolation(pod(`containerd://${ID}`), proc)).toEqual({
      pid: 70,
      netns: join(proc, '70', 'ns', 'net'),
      root: join(proc, '70', 'root'),
    });
  });

  it('understands the systemd driver, and says what is wrong when nothing is found', async () => {
    const proc = procTree({
      300: [
        `/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu1.slice/cri-containerd-${ID}.scope`,
        2,
      ],
    });
    expect(await containerPid(ID, proc)).toBe(300);
    await expect(detectLauncherIsolation(pod(`containerd://${OTHER}`), proc)).rejects.toThrow(
      `launcher pod ns/virt-launcher-x: no process of container bbbbbbbbbbbb in ${proc} (is virt-handler in the host's PID namespace, hostPID?)`,
    );
    await expect(detectLauncherIsolation(pod(), proc)).rejects.toThrow(
      'launcher pod ns/virt-launcher-x: status.containerStatuses[compute].containerID: not known yet',
    );
  });
});

describe.runIf(process.getuid?.() === 0)('device ownership in a container root (root)', () => {
  it("chowns the container's own node only, never through a symlink or a non-device", async () => {
    const root = tmp();
    mkdirSync(join(root, 'dev'));
    // A container's node: its own inode with the host device's number (/dev/null, 1:3).
    execFileSync('mknod', ['-m', '0660', join(root, 'dev', 'null'), 'c', '1', '3']);
    expect(await claimDeviceOwnership(root, 'null')).toBe(true);
    const s = statSync(join(root, 'dev', 'null'));
    expect([s.uid, s.gid, s.mode & 0o777]).toEqual([107, 107, 0o660]);
    // A device the container was not given.
    expect(await claimDeviceOwnership(root, 'kvm-absent')).toBe(false);
    // A node with another device number than the host's.
    execFileSync('mknod', [join(root, 'dev', 'zero'), 'c', '1', '3']);
    await expect(claimDeviceOwnership(root, 'zero')).rejects.toThrow("is not the host's /dev/zero");
    // A symlink to the host's node, and a plain file.
    symlinkSync('/dev/null', join(root, 'dev', 'full'));
    await expect(claimDeviceOwnership(root, 'full')).rejects.toThrow(/ELOOP|symbolic link/);
    writeFileSync(join(root, 'dev', 'tty'), '');
    await expect(claimDeviceOwnership(root, 'tty')).rejects.toThrow('not a character device');
    // The host's own node (a root that is the host's).
    const host = statSync('/dev/null');
    await expect(claimDeviceOwnership('/', 'null')).rejects.toThrow("is the host's own /dev/null");
    expect(statSync('/dev/null').uid).toBe(host.uid);
    // A `dev` that leads elsewhere.
    const other = tmp();
    symlinkSync('/', join(other, 'dev'));
    await expect(claimDeviceOwnership(other, 'null')).rejects.toThrow('not a directory');
    await expect(claimDeviceOwnership(root, '../null')).rejects.toThrow('not a device name');
  });
});

describe("a container's resolv.conf", () => {
  it('is read in place, never through a symlink of the file or its directory', async () => {
    const root = tmp();
    mkdirSync(join(root, 'etc'));
    writeFileSync(join(root, 'etc', 'resolv.conf'), 'nameserver 10.96.0.10\nsearch ns.svc.cluster.local\n');
    expect(await readResolvConf(join(root, 'etc', 'resolv.conf'), true)).toEqual({
      nameservers: ['10.96.0.10'],
      search: ['ns.svc.cluster.local'],
    });
    const host = tmp();
    writeFileSync(join(host, 'resolv.conf'), 'nameserver 192.0.2.1\n');
    const linked = tmp();
    mkdirSync(join(linked, 'etc'));
    symlinkSync(join(host, 'resolv.conf'), join(linked, 'etc', 'resolv.conf'));
    expect(await readResolvConf(join(linked, 'etc', 'resolv.conf'), true)).toEqual({
      nameservers: [],
      search: [],
    });
    const dirLinked = tmp();
    symlinkSync(host, join(dirLinked, 'etc'));
    expect(await readResolvConf(join(dirLinked, 'etc', 'resolv.conf'), true)).toEqual({
      nameservers: [],
      search: [],
    });
    // Without noFollow (local mode's host file) a link is followed.
    expect((await readResolvConf(join(linked, 'etc', 'resolv.conf'))).nameservers).toEqual(['192.0.2.1']);
  });
});
