/**
 * The launcher's RPCs that act on its domain directly and hold no launcher state: pause,
 * unpause, reset, soft reboot, kill, the background ACPI shutdown, CPU hotplug, and the
 * SEV calls (./sev-rpcs). Each checks the
 * request's VMI is the launcher's first; those that change the domain's state have the
 * launcher look at it again.
 */
import { status } from '@grpc/grpc-js';
import type { VirtualMachineInstance } from '../../api';
import type { DomainRef, DomainState, HypervisorDriver } from '../../drivers/driver';
import { type InjectLaunchSecretRequest, LauncherRpcError, type VMIRequest } from '../launcher-protocol';
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
  /** When the shutdown in flight kills the guest (ms since the epoch). */
  private killAt = Number.POSITIVE_INFINITY;
  private killTimer: NodeJS.Timeout | undefined;
  /** Ends the wait of the shutdown in flight once an earlier kill happened. */
  private killed: (() => void) | undefined;

  constructor(private readonly h: LauncherDomainOpsHost) {}

  /**
   * Shuts the guest down: kills it at once when `graceSeconds` is 0, else ACPI and a kill
   * when the grace period runs out. Runs in the background; calls while one runs join it,
   * and a shorter grace period brings its kill forward (upstream's handler kills once the
   * VMI's current grace period, counted from the first signal, is over). The promise ends
   * with the shutdown.
   */
  startShutdown(graceSeconds: number, log: (m: string) => void): Promise<void> {
    const at = Date.now() + Math.max(0, graceSeconds) * 1000;
    if (this.shutdownInFlight) {
      if (at < this.killAt) this.killEarlier(at, log);
      return this.shutdownInFlight;
    }
    const driver = this.h.driver();
    const ref = this.h.ref();
    this.killAt = at;
    const flight = (async () => {
      try {
        const d = await driver.getDomain(ref);
        if (!d || !ACTIVE_STATES.has(d.state)) return;
        if (graceSeconds <= 0) {
          await driver.kill(ref);
          return;
        }
        const brought = new Promise<void>((resolve) => {
          this.killed = resolve;
        });
        // The driver kills at the first deadline itself; an earlier one ends the race.
        const acpi = driver.shutdown(ref, { graceSeconds });
        acpi.catch(() => undefined);
        await Promise.race([acpi, brought]);
      } catch (e) {
        log(`shutdown: ${(e as Error).message}`);
      } finally {
        clearTimeout(this.killTimer);
        this.killTimer = undefined;
        this.killed = undefined;
        this.killAt = Number.POSITIVE_INFINITY;
        this.shutdownInFlight = undefined;
        await this.h.refresh();
      }
    })();
    this.shutdownInFlight = flight;
    return flight;
  }

  /** Moves the kill of the shutdown in flight to `at`. */
  private killEarlier(at: number, log: (m: string) => void): void {
    this.killAt = at;
    clearTimeout(this.killTimer);
    this.killTimer = setTimeout(
      () => {
        const driver = this.h.driver();
        const ref = this.h.ref();
        void (async () => {
          try {
            const d = await driver.getDomain(ref);
            if (d && ACTIVE_STATES.has(d.state)) await driver.kill(ref);
          } catch (e) {
            log(`shutdown (kill at the shorter grace period): ${(e as Error).message}`);
          }
          this.killed?.();
        })();
      },
      Math.max(0, at - Date.now()),
    );
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

  /**
   * Reboots the guest from inside, as upstream's SoftRebootVMI: through the guest agent when
   * the VMI says it is connected, else by ACPI, which a VMI with ACPI disabled lacks.
   * Unlike upstream, an agent that fails the reboot is followed by ACPI.
   */
  async softReboot(req: VMIRequest): Promise<void> {
    const vmi = this.h.parse(req);
    const agent = (vmi.status?.conditions ?? []).some(
      (c) => c.type === 'AgentConnected' && c.status === 'True',
    );
    if (!agent && vmi.spec?.domain?.features?.acpi?.enabled === false) {
      throw new Error('VMI neither have the agent connected nor the ACPI feature enabled');
    }
    if (!agent) {
      await this.h.driver().softReboot(this.h.ref(), { via: 'acpi' });
      return;
    }
    try {
      await this.h.driver().softReboot(this.h.ref(), { via: 'agent' });
    } catch (e) {
      // An agent that cannot reboot (qemu-ga runs the guest's `shutdown -r`, which a
      // minimal guest lacks) falls back to ACPI, as libvirt's own default does; upstream
      // answers the agent's error instead.
      if (vmi.spec?.domain?.features?.acpi?.enabled === false) throw e;
      await this.h.driver().softReboot(this.h.ref(), { via: 'acpi' });
    }
  }

  /** Kills the guest if it runs. */
  async kill(req: VMIRequest): Promise<void> {
    this.h.parse(req);
    const d = await this.h.driver().getDomain(this.h.ref());
    if (d && ACTIVE_STATES.has(d.state)) await this.h.driver().kill(this.h.ref());
    await this.h.refresh();
  }

  /**
   * CPU hotplug (upstream's SyncVirtualMachineCPUs / UpdateVCPUs): the running guest gets
   * sockets x cores x threads of the VMI's spec enabled, which the domain's hotpluggable
   * vCPUs (up to maxSockets) allow.
   */
  async syncCpus(req: VMIRequest): Promise<void> {
    const vmi = this.h.parse(req);
    const cpu = vmi.spec?.domain?.cpu ?? {};
    const count = (cpu.sockets || 1) * (cpu.cores || 1) * (cpu.threads || 1);
    const hotplug = this.h.driver().cpuHotplug;
    if (!hotplug) {
      throw new LauncherRpcError(
        status.UNIMPLEMENTED,
        `CPU hotplug is not available: the ${this.h.driver().name} driver cannot change a running guest's vCPUs`,
      );
    }
    await hotplug.setVcpus(this.h.ref(), count);
    await this.h.refresh();
  }

  /**
   * Memory hotplug (upstream's SyncVirtualMachineMemory / UpdateGuestMemory): the running
   * guest's virtio-mem device asks for `memory.guest` above what it booted with.
   */
  async syncMemory(req: VMIRequest): Promise<void> {
    const vmi = this.h.parse(req);
    const hotplug = this.h.driver().memoryHotplug;
    if (!hotplug) {
      throw new LauncherRpcError(
        status.UNIMPLEMENTED,
        `memory hotplug is not available: the ${this.h.driver().name} driver cannot change a running guest's memory`,
      );
    }
    await hotplug.syncGuestMemory(vmi);
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
