/**
 * The libvirt driver's guest-agent credentials against a scripted agent: the QMP commands
 * upstream's launcher sends (libvirt's AuthorizedSSHKeysSet = guest-ssh-add-authorized-keys
 * with reset; the deprecated getent/guest-file path when that command is missing;
 * guest-set-user-password with a base64 password).
 */
import { describe, expect, it } from 'vitest';
import {
  type AgentCall,
  agentSetAuthorizedKeys,
  agentSetUserPassword,
} from '../../../src/drivers/libvirt-driver/agent-credentials';

const dom = { name: 'ns_vm', uuid: Buffer.alloc(16), id: 1 };

/** An agent that answers from `handle` and records each command. */
function scripted(handle: (execute: string, args: Record<string, unknown>) => unknown) {
  const sent: Array<{ execute: string; arguments?: Record<string, unknown> }> = [];
  const call: AgentCall = async (_d, cmd) => {
    const c = JSON.parse(cmd);
    sent.push(c);
    return JSON.stringify({ return: handle(c.execute, c.arguments ?? {}) });
  };
  return { sent, call };
}

const b64 = (s: string) => Buffer.from(s).toString('base64');

describe('guest-agent access credentials (libvirt driver)', () => {
  it('replaces the keys with guest-ssh-add-authorized-keys reset=true', async () => {
    const a = scripted(() => ({}));
    expect(await agentSetAuthorizedKeys(a.call, dom as never, 'root', ['k1', 'k2'])).toEqual({
      legacy: false,
    });
    expect(a.sent).toEqual([
      {
        execute: 'guest-ssh-add-authorized-keys',
        arguments: { username: 'root', keys: ['k1', 'k2'], reset: true },
      },
    ]);
  });

  it('falls back to getent, mkdir/chown/chmod and guest-file-write on an agent without it', async () => {
    const execs: string[][] = [];
    let written = '';
    const a = scripted((execute, args) => {
      if (execute === 'guest-ssh-add-authorized-keys') throw new Error('unreachable');
      if (execute === 'guest-exec') {
        execs.push([args.path as string, ...(args.arg as string[])]);
        return { pid: execs.length };
      }
      if (execute === 'guest-exec-status') {
        const [cmd] = execs[(args.pid as number) - 1];
        const out = cmd === 'getent' ? 'alice:x:1000:1001:Alice:/home/alice:/bin/sh\n' : '';
        return { exited: true, exitcode: 0, 'out-data': b64(out) };
      }
      if (execute === 'guest-file-open') return 7;
      if (execute === 'guest-file-write')
        written = Buffer.from(args['buf-b64'] as string, 'base64').toString();
      return {};
    });
    const call: AgentCall = async (d, cmd, t) => {
      if (JSON.parse(cmd).execute === 'guest-ssh-add-authorized-keys') {
        a.sent.push(JSON.parse(cmd));
        throw new Error('The command guest-ssh-add-authorized-keys has not been found');
      }
      return a.call(d, cmd, t);
    };
    expect(await agentSetAuthorizedKeys(call, dom as never, 'alice', ['k1', 'k2'])).toEqual({ legacy: true });
    expect(execs).toEqual([
      ['getent', 'passwd', 'alice'],
      ['mkdir', '-p', '/home/alice/.ssh'],
      ['chown', '1000:1001', '/home/alice/.ssh'],
      ['chmod', '700', '/home/alice/.ssh'],
      ['chown', '1000:1001', '/home/alice/.ssh/authorized_keys'],
      ['chmod', '600', '/home/alice/.ssh/authorized_keys'],
    ]);
    expect(a.sent.find((c) => c.execute === 'guest-file-open')?.arguments).toEqual({
      path: '/home/alice/.ssh/authorized_keys',
      mode: 'w',
    });
    expect(written).toBe('k1\nk2');
    // Closed before the chown and chmod of the file (two guest-exec + status pairs).
    expect(a.sent.at(-5)).toEqual({ execute: 'guest-file-close', arguments: { handle: 7 } });
  });

  it('names both failures when neither path works', async () => {
    const call: AgentCall = async () => {
      throw new Error('Guest agent is not responding');
    };
    await expect(agentSetAuthorizedKeys(call, dom as never, 'root', ['k'])).rejects.toThrow(
      'failed to set SSH keys: error from guest-ssh-add-authorized-keys: Guest agent is not responding; error from using guest-file-write: Guest agent is not responding',
    );
  });

  it('sets a password with guest-set-user-password, base64 and not crypted', async () => {
    const a = scripted(() => ({}));
    await agentSetUserPassword(a.call, dom as never, 'root', 'pä ss');
    expect(a.sent).toEqual([
      {
        execute: 'guest-set-user-password',
        arguments: { username: 'root', password: b64('pä ss'), crypted: false },
      },
    ]);
  });
});
