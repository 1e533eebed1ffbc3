/**
 * The launcher's FreezeVirtualMachine, UnfreezeVirtualMachine and GetScreenshot RPCs
 * (upstream's names) over the driver's optional `fsFreeze` and `screenshot`.
 *
 * Freeze is upstream's: idempotent (an already frozen guest is left as it is), and with a
 * non-zero `unfreezeTimeoutSeconds` the launcher thaws the guest itself when nobody
 * called Unfreeze in time, so a backup tool that dies cannot leave the guest frozen.
 * The screenshot is the driver's picture (QEMU: a PPM) converted to PNG, as upstream's
 * `vnc/screenshot` answers.
 */
import { status } from '@grpc/grpc-js';
import type { VirtualMachineInstance } from '../../api';
import type { DomainRef, FsFreezeSupport, HypervisorDriver } from '../../drivers/driver';
import { screenshotPng } from '../common/ppm-to-png';
import { isUnfreezeTimeoutSeconds, MAX_UNFREEZE_TIMEOUT_SECONDS } from '../common/unfreeze-timeout';
import { LauncherRpcError } from '../launcher-protocol/rpc-error';
import { driverRpcError } from './driver-rpc-error';

/** One launcher's freeze state and its safety thaw. */
export class LauncherGuestOps {
  private thawTimer: NodeJS.Timeout | undefined;
  private isFrozen = false;

  constructor(
    private readonly driver: () => HypervisorDriver,
    private readonly ref: () => DomainRef,
    private readonly log: (m: string) => void,
    /** Called when {@link frozen} changes (the launcher reports its domain again). */
    private readonly onChange: () => void = () => {},
  ) {}

  /** A freeze was requested and no thaw since: upstream's VMI `status.fsFreezeStatus: frozen`. */
  get frozen(): boolean {
    return this.isFrozen;
  }

  private setFrozen(v: boolean): void {
    if (v === this.isFrozen) return;
    this.isFrozen = v;
    this.onChange();
  }

  private get subject(): string {
    const r = this.ref();
    return `VirtualMachineInstance ${r.namespace}/${r.name}`;
  }

  private fs(): FsFreezeSupport {
    const d = this.driver();
    if (!d.fsFreeze) {
      throw new LauncherRpcError(
        status.UNIMPLEMENTED,
        `${this.subject}: filesystem freeze is not available: the ${d.name} driver has no guest agent freeze`,
      );
    }
    return d.fsFreeze;
  }

  private cancelThaw(): void {
    if (this.thawTimer) clearTimeout(this.thawTimer);
    this.thawTimer = undefined;
  }

  /** FreezeVirtualMachine. */
  async freeze(_vmi: VirtualMachineInstance, unfreezeTimeoutSeconds: number): Promise<void> {
    // Past the maximum a timer would fire at once and thaw the guest straight away.
    if (!isUnfreezeTimeoutSeconds(unfreezeTimeoutSeconds)) {
      throw new LauncherRpcError(
        status.INVALID_ARGUMENT,
        `${this.subject}: unfreezeTimeoutSeconds ${unfreezeTimeoutSeconds}: a whole number of seconds from 0 to ${MAX_UNFREEZE_TIMEOUT_SECONDS} is required`,
      );
    }
    const fs = this.fs();
    const ref = this.ref();
    try {
      if ((await fs.status(ref)) === 'frozen') {
        this.setFrozen(true);
        return;
      }
      const n = await fs.freeze(ref);
      this.log(`froze ${n} guest filesystem(s)`);
    } catch (e) {
      throw driverRpcError(e, this.subject, 'failed to freeze the guest filesystems');
    }
    this.setFrozen(true);
    this.cancelThaw();
    if (unfreezeTimeoutSeconds > 0) {
      this.thawTimer = setTimeout(() => {
        this.thawTimer = undefined;
        this.log(`Unfreeze was not called within ${unfreezeTimeoutSeconds} s: thawing the guest filesystems`);
        this.fs()
          .thaw(this.ref())
          .then(
            () => this.setFrozen(false),
            (e: Error) => this.log(`safety thaw: ${e.message}`),
          );
      }, unfreezeTimeoutSeconds * 1000);
      this.thawTimer.unref?.();
    }
  }

  /** UnfreezeVirtualMachine: thaws a frozen guest; a thawed one is left as it is. */
  async unfreeze(_vmi: VirtualMachineInstance): Promise<void> {
    this.cancelThaw();
    const fs = this.fs();
    const ref = this.ref();
    try {
      if ((await fs.status(ref)) !== 'thawed') {
        const n = await fs.thaw(ref);
        this.log(`thawed ${n} guest filesystem(s)`);
      } else if (this.frozen) {
        // A guest with nothing to freeze (its agent froze 0 filesystems) reports thawed: the
        // freeze window still ends here, and its log says so.
        this.log('unfroze: the guest agent reports its filesystems thawed already');
      }
    } catch (e) {
      throw driverRpcError(e, this.subject, 'failed to thaw the guest filesystems');
    }
    this.setFrozen(false);
  }

  /** GetScreenshot: the display as PNG. */
  async screenshot(_vmi: VirtualMachineInstance): Promise<{ mime: string; data: Uint8Array }> {
    const d = this.driver();
    if (!d.screenshot) {
      throw new LauncherRpcError(
        status.UNIMPLEMENTED,
        `${this.subject}: screenshots are not available: the ${d.name} driver cannot capture the display`,
      );
    }
    try {
      const shot = await d.screenshot(this.ref());
      return { mime: 'image/png', data: screenshotPng(shot.mime, shot.data) };
    } catch (e) {
      throw driverRpcError(e, this.subject, 'failed to take a screenshot');
    }
  }

  /** Stops the safety thaw timer (the launcher is going away). */
  close(): void {
    this.cancelThaw();
  }
}
