/**
 * The launcher's devices cgroup (virt-handler/device-cgroup.ts): the devices line of
 * `/proc/<pid>/cgroup` (v1, v2, hybrid, odd paths refused), the rule text, dev_t
 * splitting, and allow/deny written under a scratch cgroup root; a v2 process is refused.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  blockDeviceRule,
  CgroupV2Error,
  DeviceCgroup,
  parseDevicesCgroup,
  splitDev,
} from '../../../src/controllers/virt-handler/device-cgroup';

const dir = mkdtempSync(join(tmpdir(), 'kvts-devcg-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HYBRID = `9:name=systemd:/kvts-node2/kubepods/burstable/pod1234/abcd
5:devices:/kvts-node2/kubepods/burstable/pod1234/abcd
4:memory:/kvts-node2/kubepods/burstable/pod1234/abcd
0::/
`;

describe('parseDevicesCgroup', () => {
  it('takes the v1 devices line, also when it shares a hierarchy, and wins over the hybrid 0:: line', () => {
    expect(parseDevicesCgroup(HYBRID)).toEqual({
      version: 1,
      path: '/kvts-node2/kubepods/burstable/pod1234/abcd',
    });
    expect(parseDevicesCgroup('0::/\n3:cpu,devices:/a/b\n')).toEqual({ version: 1, path: '/a/b' });
    expect(
      parseDevicesCgroup(
        '5:devices:/kubepods.slice/kubepods-pod1_2.slice/cri-containerd-0123456789ab.scope\n',
      ),
    ).toEqual({
      version: 1,
      path: '/kubepods.slice/kubepods-pod1_2.slice/cri-containerd-0123456789ab.scope',
    });
  });

  it('says v2 when only the unified line is there, undefined when nothing is', () => {
    expect(parseDevicesCgroup('0::/kubepods/pod1/c1\n')).toEqual({ version: 2, path: '/kubepods/pod1/c1' });
    expect(parseDevicesCgroup('')).toBeUndefined();
    expect(parseDevicesCgroup('4:memory:/x\n')).toBeUndefined();
  });

  it('refuses a path that could leave the hierarchy', () => {
    expect(() => parseDevicesCgroup('5:devices:/a/../../etc\n')).toThrow('not a plain absolute cgroup path');
    expect(() => parseDevicesCgroup('5:devices:a/b\n')).toThrow('not a plain absolute cgroup path');
    expect(() => parseDevicesCgroup('5:devices:/a b\n')).toThrow('not a plain absolute cgroup path');
  });
});

describe('rules and device numbers', () => {
  it('writes a block rule with read, write and mknod', () => {
    expect(blockDeviceRule({ major: 7, minor: 3 })).toBe('b 7:3 rwm');
    expect(() => blockDeviceRule({ major: -1, minor: 0 })).toThrow('not a device number');
  });

  it('splits dev_t as glibc does (small and large numbers)', () => {
    expect(splitDev(0x0703n)).toEqual({ major: 7, minor: 3 });
    expect(splitDev(0x10300n)).toEqual({ major: 259, minor: 0 });
    // minor 300 (past 8 bits): low byte in bits 0-7, the rest from bit 20.
    expect(splitDev((7n << 8n) | (300n & 0xffn) | ((300n & ~0xffn) << 12n))).toEqual({
      major: 7,
      minor: 300,
    });
  });
});

describe('DeviceCgroup', () => {
  const proc = join(dir, 'proc');
  const cgroupRoot = join(dir, 'cgroup');
  const cg = new DeviceCgroup({ procRoot: proc, cgroupRoot });
  const container = join(cgroupRoot, 'devices', 'kvts-node2/kubepods/burstable/pod1234/abcd');
  mkdirSync(join(proc, '42'), { recursive: true });
  mkdirSync(join(proc, '43'), { recursive: true });
  writeFileSync(join(proc, '42', 'cgroup'), HYBRID);
  writeFileSync(join(proc, '43', 'cgroup'), '0::/kubepods/pod9/c9\n');

  it('allows and denies a block device in the container of the process, under the host cgroup root', async () => {
    mkdirSync(container, { recursive: true });
    writeFileSync(join(container, 'devices.allow'), '');
    writeFileSync(join(container, 'devices.deny'), '');
    expect(await cg.dir(42)).toBe(container);
    await cg.allow(42, { major: 7, minor: 5 });
    await cg.deny(42, { major: 7, minor: 5 });
    expect(readFileSync(join(container, 'devices.allow'), 'utf8')).toBe('b 7:5 rwm\n');
    expect(readFileSync(join(container, 'devices.deny'), 'utf8')).toBe('b 7:5 rwm\n');
  });

  it('creates no file where the controller has none, and refuses a v2 process', async () => {
    mkdirSync(join(proc, '44'), { recursive: true });
    writeFileSync(join(proc, '44', 'cgroup'), '5:devices:/gone\n');
    await expect(cg.allow(44, { major: 7, minor: 5 })).rejects.toThrow(
      `cgroup v1 devices controller file ${join(cgroupRoot, 'devices', 'gone', 'devices.allow')}: ENOENT (is --cgroup-root the host's cgroup mount?)`,
    );
    const err = await cg.allow(43, { major: 7, minor: 5 }).catch((e) => e);
    expect(err).toBeInstanceOf(CgroupV2Error);
    expect(err.message).toContain('unified (v2) cgroup hierarchy');
    await expect(cg.dir(0)).rejects.toThrow('not a process id');
  });
});
