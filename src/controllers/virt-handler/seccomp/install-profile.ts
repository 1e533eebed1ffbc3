/**
 * virt-handler installs upstream's seccomp profile for launcher pods on its node
 * (pkg/virt-handler/seccomp InstallPolicy): `<kubelet root>/seccomp/kubevirt/kubevirt.json`,
 * which a pod names as `localhostProfile: kubevirt/kubevirt.json`. The profile is
 * upstream's: containers/common's default profile with `userfaultfd` allowed (post-copy
 * migration needs it). ./kubevirt-profile.json is that profile, made from Debian's
 * golang-github-containers-common 0.50.1 (`/usr/share/containers/seccomp.json`, Apache-2.0)
 * with upstream's one change applied. Written only when it differs, through a rename, so
 * the kubelet never reads half a file.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import profile from './kubevirt-profile.json';

/** The profile's path under the kubelet's seccomp directory (upstream's). */
export const PROFILE_RELATIVE_PATH = join('kubevirt', 'kubevirt.json');

/** The profile's bytes as installed. */
export function kubevirtSeccompProfile(): string {
  return `${JSON.stringify(profile)}\n`;
}

/**
 * Installs the profile under `seccompDir` (the kubelet's `<root-dir>/seccomp`); returns
 * whether it wrote (false: already current).
 */
export function installSeccompProfile(seccompDir: string): boolean {
  const dir = join(seccompDir, 'kubevirt');
  const path = join(seccompDir, PROFILE_RELATIVE_PATH);
  const want = kubevirtSeccompProfile();
  let have: string | undefined;
  try {
    have = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
      throw new Error(`seccomp profile ${path}: ${(e as Error).message}`);
  }
  if (have === want) return false;
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, want, { mode: 0o600 });
  renameSync(tmp, path);
  return true;
}
