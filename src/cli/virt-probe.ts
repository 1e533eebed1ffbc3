/**
 * `kubevirt-ts virt-probe`: upstream's cmd/virt-probe, the exec probe the VMI controller
 * puts on the launcher pod's compute container for a VMI's `exec` and `guestAgentPing`
 * probes. The kubelet (or the local pod runtime) runs it inside the pod; it asks the
 * launcher, over its command socket, to run the command in the guest through the guest
 * agent (or to ping the agent), prints the command's output and exits with its exit code
 * (1 when the launcher or the agent could not do it). Loaded before commander (see
 * kubevirt-ts.ts): a probe runs every period, so it loads only what it needs.
 */
import { join } from 'node:path';
import { LAUNCHER_DIRS } from '../controllers/common/launcher-args';
import { pathMapFromEnv } from '../controllers/common/path-map';
import { LauncherClient } from '../controllers/launcher-protocol/client';
import { LAUNCHER_SOCKET } from '../controllers/launcher-protocol/paths';
import { shortDir } from '../controllers/launcher-protocol/short-dir';

/** The flags of virt-probe (upstream's names). */
export interface VirtProbeArgs {
  socket?: string;
  domainName: string;
  timeoutSeconds: number;
  guestAgentPing: boolean;
  command?: string;
  args: string[];
}

/** Parses upstream's flags; throws naming the flag on bad input. */
export function parseVirtProbeArgs(argv: string[]): VirtProbeArgs {
  const out: VirtProbeArgs = { domainName: '', timeoutSeconds: 1, guestAgentPing: false, args: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      out.args = argv.slice(i + 1);
      break;
    }
    const [flag, inline] = a.includes('=') ? [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)] : [a];
    if (flag === '--guestAgentPing') {
      out.guestAgentPing = inline === undefined || inline === 'true';
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined) throw new Error(`virt-probe: ${flag} needs a value`);
    if (flag === '--socket') out.socket = value;
    else if (flag === '--domainName') out.domainName = value;
    else if (flag === '--command') out.command = value;
    else if (flag === '--timeoutSeconds') {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1)
        throw new Error(`virt-probe: --timeoutSeconds ${value}: not a positive integer`);
      out.timeoutSeconds = n;
    } else throw new Error(`virt-probe: unknown flag ${flag}`);
  }
  if (!out.guestAgentPing && !out.command)
    throw new Error('virt-probe: --command or --guestAgentPing is required');
  return out;
}

/** The launcher's command socket as this container sees it (through the pod's mounts under the local runtime). */
export function launcherSocketInPod(env: NodeJS.ProcessEnv = process.env): string {
  return join(shortDir(pathMapFromEnv(env).toHost(join(LAUNCHER_DIRS.share, 'sockets'))), LAUNCHER_SOCKET);
}

/** Runs the probe; resolves to the process's exit code. */
export async function runVirtProbe(a: VirtProbeArgs): Promise<number> {
  const client = new LauncherClient(a.socket ?? launcherSocketInPod(), {
    timeoutMs: (a.timeoutSeconds + 1) * 1000,
  });
  try {
    if (a.guestAgentPing) {
      await client.guestPing(a.domainName, a.timeoutSeconds);
      return 0;
    }
    const res = await client.exec(a.domainName, a.command ?? '', a.args, a.timeoutSeconds);
    if (res.stdout) process.stdout.write(res.stdout.endsWith('\n') ? res.stdout : `${res.stdout}\n`);
    return res.exitCode;
  } catch (err) {
    process.stderr.write(`virt-probe: ${(err as Error).message}\n`);
    return 1;
  } finally {
    client.close();
  }
}

/** The entry: `kubevirt-ts virt-probe FLAGS...`. */
export async function virtProbeMain(argv: string[]): Promise<never> {
  let code: number;
  try {
    code = await runVirtProbe(parseVirtProbeArgs(argv));
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    code = 2;
  }
  process.exit(code);
}
