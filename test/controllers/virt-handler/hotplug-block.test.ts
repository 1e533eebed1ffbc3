/**
 * A hotplugged block-mode claim's device (virt-handler/hotplug-block.ts) on a scratch
 * pods directory with real device nodes (root: mknod): the claim's node found in the
 * attachment pod's `hotplug-disks/<volume>/`, a node of the same numbers made at
 * `<volume>` in the launcher pod's, owned by 107, allowed in a scratch devices cgroup;
 * detach denies it and removes the node; names that could leave the directory are refused;
 * a v2 host is refused before any node is made.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CgroupV2Error, DeviceCgroup } from '../../../src/controllers/virt-handler/device-cgroup';
import { BlockHotplug } from '../../../src/controllers/virt-handler/hotplug-block';

const root = process.getuid?.() === 0;
const dir = mkdtempSync(join(tmpdir(), 'kvts-hpblock-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const pods = join(dir, 'pods');
const proc = join(dir, 'proc');
const cgroupRoot = join(dir, 'cgroup');
const emptyDir = (uid: string) => join(pods, uid, 'volumes', 'kubernetes.io~empty-dir', 'hotplug-disks');
const container = join(cgroupRoot, 'devices', 'kubepods', 'podlp', 'c1');

function setUp() {
  mkdirSync(join(emptyDir('ap'), 'data'), { recursive: true });
  mkdirSync(emptyDir('lp'), { recursive: true });
  mkdirSync(join(proc, '77'), { recursive: true });
  writeFileSync(join(proc, '77', 'cgroup'), '5:devices:/kubepods/podlp/c1\n0::/\n');
  mkdirSync(container, { recursive: true });
  writeFileSync(join(container, 'devices.allow'), '');
  writeFileSync(join(container, 'devices.deny'), '');
}

describe.skipIf(!root)('BlockHotplug', () => {
  setUp();
  const calls: string[] = [];
  const block = new BlockHotplug({
    podsRoot: pods,
    cgroup: new DeviceCgroup({ procRoot: proc, cgroupRoot }),
    launcherPid: async (uid) => (uid === 'lp' ? 77 : undefined),
    run: async (cmd, args) => {
      calls.push([cmd, ...args].join(' '));
      execFileSync(cmd, args);
    },
  });

  it('waits while the runtime has not made the claim device in the attachment pod', async () => {
    expect(await block.source('ap', 'data')).toBeUndefined();
    expect(await block.attach('ap', 'lp', 'data')).toBe(false);
    expect(calls).toEqual([]);
  });

  it("makes the claim's device in the launcher pod, owned by qemu, and allows it in the container's cgroup", async () => {
    // What runc makes for the attachment pod's volumeDevices entry /path/data/disk.
    execFileSync('mknod', ['-m', '0660', join(emptyDir('ap'), 'data', 'disk'), 'b', '7', '211']);
    writeFileSync(join(emptyDir('ap'), 'data', 'notes'), 'a file beside it is ignored');
    expect(await block.source('ap', 'data')).toEqual({ major: 7, minor: 211 });
    expect(await block.attach('ap', 'lp', 'data')).toBe(true);
    const target = join(emptyDir('lp'), 'data');
    expect(calls).toEqual([`mknod -m 0660 ${target} b 7 211`]);
    const st = statSync(target);
    expect(st.isBlockDevice()).toBe(true);
    expect([st.uid, st.gid, st.mode & 0o777]).toEqual([107, 107, 0o660]);
    expect(readFileSync(join(container, 'devices.allow'), 'utf8')).toBe('b 7:211 rwm\n');
    expect(await block.has('lp', 'data')).toBe(true);
    // Again (a handler restart): the node is kept, the rule written again.
    expect(await block.attach('ap', 'lp', 'data')).toBe(true);
    expect(calls).toHaveLength(1);
  });

  it('refuses a node of other numbers or another kind at the target', async () => {
    execFileSync('mknod', ['-m', '0660', join(emptyDir('lp'), 'other'), 'b', '7', '9']);
    mkdirSync(join(emptyDir('ap'), 'other'));
    execFileSync('mknod', ['-m', '0660', join(emptyDir('ap'), 'other', 'disk'), 'b', '7', '10']);
    await expect(block.attach('ap', 'lp', 'other')).rejects.toThrow("is device 7:9, not the claim's 7:10");
    writeFileSync(join(emptyDir('lp'), 'plain'), '');
    await expect(block.has('lp', 'plain')).rejects.toThrow('exists and is not a block device');
  });

  it('denies the device and removes the node on detach (idempotent)', async () => {
    await block.detach('lp', 'data');
    expect(existsSync(join(emptyDir('lp'), 'data'))).toBe(false);
    expect(readFileSync(join(container, 'devices.deny'), 'utf8')).toBe('b 7:211 rwm\n');
    await block.detach('lp', 'data');
    expect(readFileSync(join(container, 'devices.deny'), 'utf8')).toBe('b 7:211 rwm\n');
  });

  it('refuses names and uids that could leave the pods directory', async () => {
    expect(() => block.target('lp', '../x')).toThrow('volume name "../x" is not a DNS-1123 label');
    expect(() => block.target('lp', 'Data')).toThrow('is not a DNS-1123 label');
    await expect(block.source('../lp', 'data')).rejects.toThrow('pod uid "../lp" is not a plain token');
  });

  it('on a cgroup v2 launcher, refuses before making any node', async () => {
    writeFileSync(join(proc, '77', 'cgroup'), '0::/kubepods/podlp/c1\n');
    calls.length = 0;
    const err = await block.attach('ap', 'lp', 'data').catch((e) => e);
    expect(err).toBeInstanceOf(CgroupV2Error);
    expect(calls).toEqual([]);
    expect(existsSync(join(emptyDir('lp'), 'data'))).toBe(false);
  });
});
