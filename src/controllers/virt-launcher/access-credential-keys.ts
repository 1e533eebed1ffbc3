/**
 * The SSH public keys a VMI's `accessCredentials` give its cloud-init volume (upstream's
 * resolveSSHPublicKeys in pkg/cloud-init): for each entry whose propagationMethod is the
 * volume's kind (noCloud or configDrive), every key of its Secret, read from where the
 * launcher pod mounts it (volume-sources.ts), in the order upstream reads them (entries in
 * spec order, a Secret's files by name; kubelet's `..` bookkeeping entries skipped).
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import type { VirtualMachineInstance } from '../../api';
import type { PathMap } from '../common/path-map';
import { accessCredentialSecretDir } from './volume-sources';

/** A Secret name that can be a path segment and part of a pod volume name (validation says so too). */
const SECRET_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Which cloud-init data source a volume is. */
export type CloudInitKind = 'noCloud' | 'configDrive';

/**
 * Reads the keys for cloud-init data source `kind` of `vmi`. Throws with the entry's field
 * path when a Secret's directory is missing or unreadable (the pod mounts it; a missing
 * one means the pod was rendered without it).
 */
export async function readSshPublicKeys(
  vmi: VirtualMachineInstance,
  kind: CloudInitKind,
  map: PathMap,
): Promise<string[]> {
  const keys: string[] = [];
  const creds = vmi.spec.accessCredentials ?? [];
  for (let i = 0; i < creds.length; i++) {
    const ssh = creds[i].sshPublicKey;
    if (!ssh?.propagationMethod?.[kind]) continue;
    const secretName = ssh.source?.secret?.secretName;
    if (!secretName) continue;
    const field = `spec.accessCredentials[${i}].sshPublicKey.source.secret.secretName`;
    if (!SECRET_NAME.test(secretName))
      throw new Error(`${field}: '${secretName}' must be a DNS label (it names a directory)`);
    const dir = map.toHost(accessCredentialSecretDir(secretName));
    let names: string[];
    try {
      names = (await readdir(dir)).sort();
    } catch (e) {
      throw new Error(
        `${field}: secret '${secretName}' is not mounted at ${accessCredentialSecretDir(secretName)}: ${(e as Error).message}`,
      );
    }
    for (const name of names) {
      if (name.startsWith('..')) continue;
      const file = `${dir}/${name}`;
      // Follows kubelet's per-key links into its `..data` directory.
      if (!(await stat(file).catch(() => undefined))?.isFile()) continue;
      const key = (await readFile(file, 'utf8')).trim();
      if (key) keys.push(key);
    }
  }
  return keys;
}
