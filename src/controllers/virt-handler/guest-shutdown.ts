/**
 * A deleted VMI's guest, through its launcher (upstream's processVmShutdown and
 * processVmDelete): while the guest runs it is asked to shut down with what is left of
 * the VMI's grace period, or killed once that ran out (./shutdown-clock), with one
 * ShuttingDown event; once it is down the launcher is told to drop the domain and exit,
 * with one Deleted event.
 */
import type { VirtualMachineInstance } from '../../api/generated/types';
import type { LauncherCalls } from './launcher-calls';
import { ShutdownClock } from './shutdown-clock';
import { VMI_GRACEFUL_SHUTDOWN, VMI_SIGNAL_DELETION, type VmiEvent } from './vmi-events';

export class GuestShutdown {
  /** VMIs (uid) already told to shut down gracefully: one ShuttingDown event each. */
  private readonly signaled = new Set<string>();
  /** When each deleted VMI's guest is killed (./shutdown-clock). */
  private readonly clock = new ShutdownClock();
  /** VMIs (uid) whose launcher was told to drop the domain: one Deleted event each. */
  private readonly deleted = new Set<string>();

  constructor(
    private readonly d: {
      calls: LauncherCalls;
      record(vmi: VirtualMachineInstance, e: VmiEvent): void;
    },
  ) {}

  /** Asks the running guest of deleted `vmi` to go (kill or ACPI); returns ms to look again. */
  async shutDown(vmi: VirtualMachineInstance, podUid: string): Promise<number> {
    const uid = vmi.metadata?.uid ?? '';
    // 0 or run out: kill; else ACPI with what is left of the VMI's current grace period.
    const step = this.clock.next(uid, vmi.spec.terminationGracePeriodSeconds ?? 30);
    const asked = await this.d.calls.call(podUid, uid, (c) =>
      step.kill ? c.killVirtualMachine(vmi) : c.shutdownVirtualMachine(vmi, step.secondsLeft),
    );
    if (asked.ok && !this.signaled.has(uid)) {
      this.signaled.add(uid);
      this.d.record(vmi, VMI_GRACEFUL_SHUTDOWN);
    }
    return 1_000;
  }

  /** Tells the launcher to drop the domain and exit (upstream's DeleteDomain): `Deleted` once. */
  async signalDeletion(vmi: VirtualMachineInstance, podUid: string): Promise<boolean> {
    const uid = vmi.metadata?.uid ?? '';
    const told = (await this.d.calls.call(podUid, uid, (c) => c.deleteVirtualMachine(vmi))).ok;
    if (told && !this.deleted.has(uid)) {
      this.deleted.add(uid);
      this.d.record(vmi, VMI_SIGNAL_DELETION);
    }
    return told;
  }

  /** Forgets a collected VMI. */
  forget(uid: string): void {
    this.signaled.delete(uid);
    this.clock.forget(uid);
    this.deleted.delete(uid);
  }
}
