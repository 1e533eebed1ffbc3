/**
 * The launcher's Exec and GuestPing RPCs, what `virt-probe` calls for a VMI's exec and
 * guestAgentPing probes (upstream's cmd-server Exec and GuestPing over the driver's guest
 * agent). As upstream, a command that ran answers success with its exit code (non-zero
 * included: the probe decides); one that could not run, or a ping the agent did not
 * answer, answers `success: false` with the agent's message.
 */
import { status } from '@grpc/grpc-js';
import { type DomainRef, domainName, type HypervisorDriver } from '../../drivers/driver';
import type { GuestAgentSupport } from '../../drivers/guest-agent';
import type { ExecRequest, GuestPingRequest } from '../launcher-protocol/generated/kubevirt/cmd/v1/cmd';
import { LauncherRpcError } from '../launcher-protocol/rpc-error';

/** Pause reasons that are faults (upstream's isPausedButHealthy excludes them). */
const FAULT_PAUSE_REASONS = new Set(['ioerror', 'crashed', 'postcopy-failed']);

/** One launcher's probe calls. */
export class LauncherProbeOps {
  constructor(
    private readonly driver: () => HypervisorDriver,
    private readonly ref: () => DomainRef,
  ) {}

  /** The guest agent, after checking the request names this launcher's domain. */
  private agent(requested: string, op: 'exec' | 'ping'): GuestAgentSupport {
    const own = domainName(this.ref());
    // virt-probe passes the domain it was rendered for; another one is not served here.
    if (requested && requested !== own) {
      throw new LauncherRpcError(
        status.INVALID_ARGUMENT,
        `domainName ${JSON.stringify(requested)}: this launcher runs domain ${own}`,
      );
    }
    const d = this.driver();
    if (!d.guestAgent?.[op]) {
      throw new LauncherRpcError(
        status.UNIMPLEMENTED,
        `domain ${own}: the ${d.name} driver cannot ${op === 'exec' ? 'run commands in the guest' : 'ping the guest agent'}`,
      );
    }
    return d.guestAgent;
  }

  /** Runs the probe's command in the guest: its exit code and standard output. */
  async exec(req: ExecRequest): Promise<{ exitCode: number; stdout: string }> {
    if (!req.Command) throw new LauncherRpcError(status.INVALID_ARGUMENT, 'Exec: Command is empty');
    const agent = this.agent(req.domainName, 'exec');
    return agent.exec!(this.ref(), req.Command, req.Args, req.timeoutSeconds || 1);
  }

  /**
   * Resolves when the guest agent answers guest-ping, or when it cannot because the guest
   * is paused for a reason that is no fault (a user pause, a snapshot's), as upstream's
   * GuestPing suppresses those failures: an agent whose vCPUs are stopped cannot answer.
   */
  async guestPing(req: GuestPingRequest): Promise<void> {
    const agent = this.agent(req.domainName, 'ping');
    try {
      await agent.ping!(this.ref(), req.timeoutSeconds || 1);
    } catch (err) {
      const dom = await this.driver()
        .getDomain(this.ref())
        .catch(() => undefined);
      if (dom?.state === 'paused' && !FAULT_PAUSE_REASONS.has(dom.reason)) return;
      throw err;
    }
  }
}
