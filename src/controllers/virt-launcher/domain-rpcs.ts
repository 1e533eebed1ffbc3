/**
 * The launcher's RPCs that act on its domain directly and hold no launcher state: pause,
 * unpause, reset, soft reboot, kill, the background ACPI shutdown, and the SEV calls
 * (./sev-rpcs). Each checks the
 * request's VMI is the launcher's first; those that change the domain's state have the
 * launcher look at it again.
 */
import type { VirtualMachineInstance } from '../../api';
import type { DomainRef, DomainState, HypervisorDriver } from '../../drivers/driver';
import type { InjectLaunchSecretRequest, VMIRequest } from '../launcher-protocol';
import * as sevRpcs from './sev-rpcs';

/** Domain states in which a guest runs (QEMU is up). */
export const ACTIVE_STATES: ReadonlySet<DomainState> = new Set<DomainState>([
  'running',
  'blocked',
  'paused',
  'pmsuspended',
  'shutdown',
]);

/** What {@link LauncherDomainOps} needs from the launcher (read when called). */
export interface LauncherDomainOpsHost {
  driver: () => HypervisorDriver;
  ref: () => DomainRef;
  parse: (req: Pick<VMIRequest, 'vmi'>) => VirtualMachineInstance;
  refresh: () => Promise<void>;
}

/** The direct domain operations of one launcher. */
export class LauncherDomainOps {
  private shutdownInFlight: Promise<void> | undefined;

  constructor(private readonly h: LauncherDomainOpsHost) {}

  /**
   * Starts an ACPI shutdown (killed when `graceSeconds` run out) in the background and
   * returns at once; calls while one runs join it.
   */
  startShutdown(graceSeconds: number, log: (m: string) => void): void {
    if (this.shutdownInFlight) return;
    const driver = this.h.driver();
    this.shutdownInFlight = (async () => {
      try {
        const d = await driver.getDomain(this.h.ref());
        if (d && ACTIVE_STATES.has(d.state)) await driver.shutdown(this.h.ref(), { graceSeconds });
      } catch (e) {
        log(`shutdown: ${(e as Error).message}`);
      } finally {
        this.shutdownInFlight = undefined;
        await this.h.refresh();
      }
    })();
  }

  async pause(req: VMIRequest): Promise<void> {
    this.h.parse(req);
    await this.h.driver().pause(this.h.ref());
    await this.h.refresh();
  }

  async unpause(req: VMIRequest): Promise<void> {
    this.h.parse(req);
    await this.h.driver().unpause(this.h.ref());
    await this.h.refresh();
  }

  async reset(req: VMIRequest): Promise<void> {
    this.h.parse(req);
    await this.h.driver().reset(this.h.ref());
  }

  async softReboot(req: VMIRequest): Promise<void> {
    this.h.parse(req);
    await this.h.driver().softReboot(this.h.ref());
  }

  /** Kills the guest if it runs. */
  async kill(req: VMIRequest): Promise<void> {
    this.h.parse(req);
    const d = await this.h.driver().getDomain(this.h.ref());
    if (d && ACTIVE_STATES.has(d.state)) await this.h.driver().kill(this.h.ref());
    await this.h.refresh();
  }

  sevInfo(): Promise<Uint8Array> {
    return sevRpcs.getSevInfo(this.h.driver(), this.h.ref());
  }

  launchMeasurement(req: VMIRequest): Promise<Uint8Array> {
    this.h.parse(req);
    return sevRpcs.getLaunchMeasurement(this.h.driver(), this.h.ref());
  }

  async injectLaunchSecret(req: InjectLaunchSecretRequest): Promise<void> {
    this.h.parse(req);
    await sevRpcs.injectLaunchSecret(this.h.driver(), this.h.ref(), req.options);
  }
}
