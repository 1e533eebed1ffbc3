/** The directories of the unix sockets QEMU binds, made before a domain starts. */
import { chmod, chown, mkdir, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Domain } from '../../converter';

/** The account QEMU runs as under the system daemon (Debian: `libvirt-qemu`), if it exists. */
async function qemuAccount(): Promise<{ uid: number; gid: number } | undefined> {
  try {
    const passwd = await readFile('/etc/passwd', 'utf8');
    const line = passwd.split('\n').find((l) => l.startsWith('libvirt-qemu:'));
    if (!line) return undefined;
    const [, , uid, gid] = line.split(':');
    return { uid: Number(uid), gid: Number(gid) };
  } catch {
    return undefined;
  }
}

/**
 * Creates the directories of the unix sockets QEMU binds (serial console, channels,
 * VNC), owned by QEMU's account when we run as root, so QEMU (not root under the
 * system daemon) can create its sockets there and nobody else can.
 */
export async function ensureSocketDirs(
  domain: Domain,
  qemuUser?: { uid: number; gid: number },
): Promise<void> {
  const d = domain.devices;
  const sources = [...(d.serial ?? []), ...(d.console ?? []), ...(d.channel ?? [])]
    .filter((c) => c.type === 'unix' && c.source?.mode === 'bind' && c.source.path)
    .map((c) => c.source?.path as string);
  for (const g of d.graphics ?? []) {
    if (g.socket) sources.push(g.socket);
    for (const l of g.listen ?? []) if (l.type === 'socket' && l.socket) sources.push(l.socket);
  }
  const dirs = new Set(sources.map((p) => dirname(p)));
  if (dirs.size === 0) return;
  const me = process.getuid?.() ?? 0;
  const owner = qemuUser
    ? qemuUser.uid === me
      ? undefined
      : qemuUser
    : me === 0
      ? await qemuAccount()
      : undefined;
  for (const dir of dirs) {
    await mkdir(dir, { recursive: true });
    if (owner) {
      await chown(dir, owner.uid, owner.gid);
      await chmod(dir, 0o700);
    }
  }
}
