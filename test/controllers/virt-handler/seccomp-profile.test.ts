/**
 * virt-handler's copy of upstream's launcher seccomp profile: containers/common's default
 * profile (deny by default, errno EPERM) with userfaultfd allowed, written once to
 * <kubelet>/seccomp/kubevirt/kubevirt.json and rewritten only when it differs.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  installSeccompProfile,
  kubevirtSeccompProfile,
} from '../../../src/controllers/virt-handler/seccomp/install-profile';

const dir = mkdtempSync(join(tmpdir(), 'kvts-seccomp-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Rule {
  names: string[];
  action: string;
}

describe('kubevirt seccomp profile', () => {
  it("is a deny-by-default profile allowing what QEMU needs, userfaultfd included (upstream's change)", () => {
    const p = JSON.parse(kubevirtSeccompProfile()) as { defaultAction: string; syscalls: Rule[] };
    expect(p.defaultAction).toBe('SCMP_ACT_ERRNO');
    const allowed = new Set(p.syscalls.filter((r) => r.action === 'SCMP_ACT_ALLOW').flatMap((r) => r.names));
    for (const s of ['userfaultfd', 'ioctl', 'mmap', 'clone', 'eventfd2', 'ppoll', 'timerfd_create'])
      expect(allowed.has(s), s).toBe(true);
    const denied = p.syscalls.filter((r) => r.action === 'SCMP_ACT_ERRNO').flatMap((r) => r.names);
    expect(denied).not.toContain('userfaultfd');
    expect(denied).toContain('kexec_load');
  });

  it('installs it under the kubelet seccomp directory, rewriting only a different file', () => {
    const path = join(dir, 'kubevirt', 'kubevirt.json');
    expect(installSeccompProfile(dir)).toBe(true);
    expect(readFileSync(path, 'utf8')).toBe(kubevirtSeccompProfile());
    expect(statSync(join(dir, 'kubevirt')).mode & 0o777).toBe(0o700);
    expect(installSeccompProfile(dir)).toBe(false);
    writeFileSync(path, '{}');
    expect(installSeccompProfile(dir)).toBe(true);
    expect(readFileSync(path, 'utf8')).toBe(kubevirtSeccompProfile());
  });
});
