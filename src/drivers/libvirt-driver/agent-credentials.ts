/**
 * Access credentials through the QEMU guest agent, as upstream's launcher sets them
 * (pkg/virt-launcher/virtwrap/access-credentials): SSH keys with
 * `guest-ssh-add-authorized-keys` (reset: the file becomes exactly these keys; libvirt's
 * virDomainAuthorizedSSHKeysSet without APPEND sends the same), and for agents older than
 * 5.2 the deprecated path: `getent passwd` through guest-exec for the home directory,
 * mkdir/chown/chmod of `~/.ssh`, the file written with guest-file-open/write/close and
 * chowned to the user. Passwords with `guest-set-user-password` (base64, not crypted).
 */
import type { DomainRef as LibvirtDomain } from '../libvirt';

/** Seconds libvirt waits for one agent reply. */
const AGENT_TIMEOUT_SECONDS = 10;
/** How long a guest-exec'd command may run (upstream's 10 s). */
const EXEC_TIMEOUT_MS = 10_000;

/** Runs one agent command (JSON text) and returns the reply text; rejects on agent errors. */
export type AgentCall = (dom: LibvirtDomain, cmd: string, timeoutSec: number) => Promise<string | null>;

async function call(run: AgentCall, dom: LibvirtDomain, execute: string, args?: object): Promise<unknown> {
  const reply = await run(
    dom,
    JSON.stringify(args ? { execute, arguments: args } : { execute }),
    AGENT_TIMEOUT_SECONDS,
  );
  return reply ? (JSON.parse(reply) as { return?: unknown }).return : undefined;
}

/** `guest-exec` of `path args` and its stdout; rejects on a non-zero exit. */
async function guestExec(run: AgentCall, dom: LibvirtDomain, path: string, args: string[]): Promise<string> {
  const started = (await call(run, dom, 'guest-exec', { path, arg: args, 'capture-output': true })) as {
    pid?: number;
  };
  const deadline = Date.now() + EXEC_TIMEOUT_MS;
  for (;;) {
    const st = (await call(run, dom, 'guest-exec-status', { pid: started?.pid })) as {
      exited?: boolean;
      exitcode?: number;
      'out-data'?: string;
      'err-data'?: string;
    };
    if (st?.exited) {
      const out = Buffer.from(st['out-data'] ?? '', 'base64').toString();
      if (st.exitcode !== 0) {
        const err = Buffer.from(st['err-data'] ?? '', 'base64')
          .toString()
          .trim();
        throw new Error(`${path} ${args.join(' ')} exited ${st.exitcode}${err ? `: ${err}` : ''}`);
      }
      return out;
    }
    if (Date.now() > deadline) throw new Error(`${path} ${args.join(' ')} did not finish in 10 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The deprecated path: write `~user/.ssh/authorized_keys` with guest-exec and guest-file-*. */
async function writeAuthorizedKeysFile(run: AgentCall, dom: LibvirtDomain, user: string, keys: string[]) {
  const entry = (await guestExec(run, dom, 'getent', ['passwd', user])).trim().split(':');
  if (entry.length < 6) throw new Error(`unable to detect home directory of user ${user}`);
  const [home, owner] = [entry[5], `${entry[2]}:${entry[3]}`];
  const dir = `${home}/.ssh`;
  const file = `${dir}/authorized_keys`;
  await guestExec(run, dom, 'mkdir', ['-p', dir]);
  await guestExec(run, dom, 'chown', [owner, dir]);
  await guestExec(run, dom, 'chmod', ['700', dir]);
  const handle = await call(run, dom, 'guest-file-open', { path: file, mode: 'w' });
  try {
    const buf = Buffer.from(keys.join('\n')).toString('base64');
    await call(run, dom, 'guest-file-write', { handle, 'buf-b64': buf });
  } finally {
    await call(run, dom, 'guest-file-close', { handle });
  }
  await guestExec(run, dom, 'chown', [owner, file]);
  await guestExec(run, dom, 'chmod', ['600', file]);
}

/** Sets `user`'s authorized keys to `keys`; `legacy` when the guest-file path did it. */
export async function agentSetAuthorizedKeys(
  run: AgentCall,
  dom: LibvirtDomain,
  user: string,
  keys: string[],
): Promise<{ legacy: boolean }> {
  try {
    await call(run, dom, 'guest-ssh-add-authorized-keys', { username: user, keys, reset: true });
    return { legacy: false };
  } catch (first) {
    try {
      await writeAuthorizedKeysFile(run, dom, user, keys);
      return { legacy: true };
    } catch (second) {
      throw new Error(
        `failed to set SSH keys: error from guest-ssh-add-authorized-keys: ${(first as Error).message}; error from using guest-file-write: ${(second as Error).message}`,
      );
    }
  }
}

/** Sets `user`'s password (upstream: virDomainSetUserPassword, flags 0). */
export async function agentSetUserPassword(
  run: AgentCall,
  dom: LibvirtDomain,
  user: string,
  password: string,
) {
  await call(run, dom, 'guest-set-user-password', {
    username: user,
    password: Buffer.from(password).toString('base64'),
    crypted: false,
  });
}
