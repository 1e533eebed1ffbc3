/**
 * `virtctl ssh [user@]TARGET [-c COMMAND]` and `virtctl scp SRC DST`, as upstream's
 * virtctl runs them with the system's client: `ssh`/`scp` with
 * `-o ProxyCommand=<this CLI> port-forward --stdio TYPE/NAME/NAMESPACE PORT`, so the SSH
 * connection travels over `port-forward --stdio` (local mode's relay into the launcher
 * pod, or virt-api's websocket on a cluster). The target options (`--kubeconfig`,
 * `--context`, `--state-dir`) are passed on to the ProxyCommand. The host name given to the
 * client is upstream's `TYPE.NAME.NAMESPACE` (what known_hosts records).
 */
import { spawn } from 'node:child_process';
import type { Command } from 'commander';
import { parseForwardTarget } from './port-forward';
import { openTarget, type TargetOptions, withTargetOptions } from './target';

/** What `ssh` and `scp` share. */
export interface SshOptions extends TargetOptions {
  port: string;
  username?: string;
  identityFile?: string;
  knownHosts?: string;
  localSshOpts: string[];
}

/** A parsed `[user@]TYPE/NAME[/NAMESPACE]` (or `[user@]NAME[.NAMESPACE]`). */
export interface SshTarget {
  kind: 'vmi' | 'vm';
  name: string;
  namespace: string;
  user?: string;
}

/** Parses an ssh target; `user@` wins over `--username`. */
export function parseSshTarget(text: string, defaultNamespace: string): SshTarget {
  const at = text.lastIndexOf('@');
  const user = at >= 0 ? text.slice(0, at) : undefined;
  if (user !== undefined && !/^[a-z_][a-z0-9_.-]{0,31}$/i.test(user))
    throw new Error(`target ${JSON.stringify(text)}: bad user name before '@'`);
  const rest = at >= 0 ? text.slice(at + 1) : text;
  const t = parseForwardTarget(rest, defaultNamespace);
  const kind = /^(vm|vms|virtualmachines?)\//.test(rest) ? 'vm' : 'vmi';
  return { kind, ...t, user };
}

function shellQuote(s: string): string {
  return /^[A-Za-z0-9_./:=@-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** The command line that runs this CLI again (node, its script, `virtctl` under kubevirt-ts). */
export function selfCommand(cmd: Command): string[] {
  const script = process.argv[1];
  if (!script) throw new Error('cannot tell how this CLI was started (no script path)');
  const underKubevirtTs = cmd.parent?.name() === 'virtctl' && cmd.parent.parent !== null;
  return [process.execPath, script, ...(underKubevirtTs ? ['virtctl'] : [])];
}

/** The client arguments before the target: ProxyCommand, identity, known hosts, extra options. */
export function sshClientArgs(self: string[], t: SshTarget, o: SshOptions): string[] {
  const port = Number(o.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`--port: ${o.port} is not a port`);
  const pass: string[] = [];
  if (o.kubeconfig) pass.push('--kubeconfig', o.kubeconfig);
  if (o.context) pass.push('--context', o.context);
  if (!o.kubeconfig && o.stateDir) pass.push('--state-dir', o.stateDir);
  const proxy = [
    ...self,
    'port-forward',
    '--stdio',
    ...pass,
    `${t.kind}/${t.name}/${t.namespace}`,
    String(port),
  ]
    .map(shellQuote)
    .join(' ')
    // ssh expands %-tokens in ProxyCommand.
    .replace(/%/g, '%%');
  const args = ['-o', `ProxyCommand=${proxy}`];
  if (o.knownHosts) args.push('-o', `UserKnownHostsFile=${o.knownHosts}`);
  args.push(...o.localSshOpts);
  if (o.identityFile) args.push('-i', o.identityFile);
  return args;
}

/** The host name the client sees: upstream's `TYPE.NAME.NAMESPACE`, with the user. */
export function sshHost(t: SshTarget, o: SshOptions): string {
  const user = t.user ?? o.username;
  return `${user ? `${user}@` : ''}${t.kind}.${t.name}.${t.namespace}`;
}

/** Splits an scp operand: remote `[user@]TARGET:PATH`, else a local path. */
export function parseScpOperand(
  text: string,
  defaultNamespace: string,
): { remote: SshTarget; path: string } | { local: string } {
  const m = /^((?:[^@/:]+@)?(?:vmi|vmis|vm|vms|virtualmachineinstances?|virtualmachines?)\/[^:]+):(.*)$/.exec(
    text,
  );
  if (!m) return { local: text };
  return { remote: parseSshTarget(m[1] as string, defaultNamespace), path: m[2] as string };
}

/** The namespace a target without one is in: `-n`, else the kubeconfig's, else `default`. */
function defaultNamespace(o: TargetOptions): string {
  if (o.namespace) return o.namespace;
  const t = openTarget(o);
  try {
    return t.namespace;
  } finally {
    t.close();
  }
}

function run(client: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(client, args, { stdio: 'inherit' });
    child.on('error', (e) =>
      reject(new Error(`${client}: ${e.message} (the system's ${client} client is needed)`)),
    );
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
  });
}

function sshOptions(cmd: Command): Command {
  return withTargetOptions(
    cmd
      .option('-p, --port <port>', "the guest's SSH port", '22')
      .option('-l, --username <user>', 'user to log in as (default: the ssh default)', process.env.USER)
      .option('-i, --identity-file <file>', 'private key to authenticate with')
      .option('--known-hosts <file>', 'known_hosts file for the client (UserKnownHostsFile)')
      .option(
        '-t, --local-ssh-opts <opt>',
        'extra option for the local client, repeatable (e.g. "-o StrictHostKeyChecking=no")',
        (v: string, prev: string[]) => [...prev, v],
        [] as string[],
      ),
  );
}

/** Registers `ssh` and `scp`. */
export function registerSshCommands(program: Command): void {
  const ssh = sshOptions(
    program
      .command('ssh')
      .description("open an SSH connection to a VMI over port-forward, with the system's ssh")
      .argument('<target>', '[user@]TYPE/NAME[/NAMESPACE] or [user@]NAME[.NAMESPACE]')
      .option('-c, --command <command>', 'command to run in the guest'),
  );
  ssh.action(async (targetText: string, o: SshOptions & { command?: string }) => {
    const t = parseSshTarget(targetText, defaultNamespace(o));
    const args = [...sshClientArgs(selfCommand(ssh), t, o), sshHost(t, o)];
    if (o.command !== undefined) args.push(o.command);
    process.exitCode = await run('ssh', args);
  });
  const scp = sshOptions(
    program
      .command('scp')
      .description("copy files to or from a VMI over port-forward, with the system's scp")
      .argument('<source>', 'local path or [user@]TYPE/NAME[/NAMESPACE]:PATH')
      .argument('<destination>', 'local path or [user@]TYPE/NAME[/NAMESPACE]:PATH')
      .option('-r, --recursive', 'copy directories recursively')
      .option('--preserve', "keep the files' times and modes"),
  );
  scp.action(
    async (src: string, dst: string, o: SshOptions & { recursive?: boolean; preserve?: boolean }) => {
      const ns = defaultNamespace(o);
      const a = parseScpOperand(src, ns);
      const b = parseScpOperand(dst, ns);
      const remote = 'remote' in a ? a : 'remote' in b ? b : undefined;
      if (!remote || ('remote' in a && 'remote' in b))
        throw new Error(
          'scp: exactly one of source and destination must be remote ([user@]TYPE/NAME[/NAMESPACE]:PATH)',
        );
      const host = sshHost(remote.remote, o);
      const operand = (x: typeof a) => ('remote' in x ? `${host}:${x.path}` : x.local);
      const args = [...sshClientArgs(selfCommand(scp), remote.remote, o)];
      if (o.recursive) args.push('-r');
      if (o.preserve) args.push('-p');
      args.push('--', operand(a), operand(b));
      process.exitCode = await run('scp', args);
    },
  );
}
