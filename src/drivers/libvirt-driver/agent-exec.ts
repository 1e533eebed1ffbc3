/**
 * The guest-agent calls behind exec and guestAgentPing probes, as upstream's launcher
 * makes them (pkg/virt-launcher/virtwrap/agent GuestExec and manager.go GuestPing):
 * `guest-exec` with captured output, `guest-exec-status` polled until the command exits or
 * the probe's timeout passes, and `guest-ping`.
 */
import type { DomainRef as LibvirtDomain } from '../libvirt';
import type { AgentCall } from './agent-credentials';

/** How often guest-exec-status is asked while the command runs. */
const STATUS_POLL_MS = 100;

async function call(
  run: AgentCall,
  dom: LibvirtDomain,
  timeoutSec: number,
  execute: string,
  args?: object,
): Promise<unknown> {
  const reply = await run(dom, JSON.stringify(args ? { execute, arguments: args } : { execute }), timeoutSec);
  return reply ? (JSON.parse(reply) as { return?: unknown }).return : undefined;
}

/**
 * Runs `command args` in the guest and returns its exit code and standard output; rejects
 * when the agent cannot run it or it does not exit within `timeoutSec` (at least 1 s).
 */
export async function agentExec(
  run: AgentCall,
  dom: LibvirtDomain,
  command: string,
  args: string[],
  timeoutSec: number,
): Promise<{ exitCode: number; stdout: string }> {
  const timeout = Math.max(1, timeoutSec);
  const started = (await call(run, dom, timeout, 'guest-exec', {
    path: command,
    arg: args,
    'capture-output': true,
  })) as { pid?: number } | undefined;
  if (typeof started?.pid !== 'number') throw new Error(`guest-exec of ${command} returned no pid`);
  const deadline = Date.now() + timeout * 1000;
  for (;;) {
    const st = (await call(run, dom, timeout, 'guest-exec-status', { pid: started.pid })) as
      | { exited?: boolean; exitcode?: number; signal?: number; 'out-data'?: string }
      | undefined;
    if (st?.exited) {
      return {
        // Killed by a signal: no exit code, a failure as a shell would report it.
        exitCode: st.exitcode ?? 128 + (st.signal ?? 0),
        stdout: Buffer.from(st['out-data'] ?? '', 'base64').toString(),
      };
    }
    if (Date.now() >= deadline) throw new Error(`${command} did not exit within ${timeout}s`);
    await new Promise((r) => setTimeout(r, STATUS_POLL_MS));
  }
}

/** `guest-ping`: resolves when the agent answers within `timeoutSec` (at least 1 s). */
export async function agentPing(run: AgentCall, dom: LibvirtDomain, timeoutSec: number): Promise<void> {
  await call(run, dom, Math.max(1, timeoutSec), 'guest-ping');
}
