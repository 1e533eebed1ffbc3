/**
 * The launcher's SyncVirtualMachine for the domain itself (upstream's SyncVMI): a guest
 * that is not running is prepared (network phase 2, volumes, passt) and started from the
 * VMI; a running guest only gets its live changes: hotplugged volumes (./hotplug-disks)
 * and NICs on secondary networks (./hotplug-nics).
 */
import type { VirtualMachineInstance } from '../../api';
import type { DomainRef, HypervisorDriver, SyncOptions } from '../../drivers/driver';
import { ACTIVE_STATES } from './domain-rpcs';
import { LauncherHotplug, withVolumesOf } from './hotplug-disks';
import { LauncherNics } from './hotplug-nics';
import type { VirtLauncherOptions } from './launcher-options';

/** What the guest sync needs of its launcher. */
export interface GuestSyncHost {
  ref: DomainRef;
  opts: Pick<
    VirtLauncherOptions,
    | 'prepareNetwork'
    | 'prepareVolumes'
    | 'networkBackends'
    | 'syncOptions'
    | 'networkReport'
    | 'blockVolumes'
    | 'hotplugDir'
  >;
  /** The VMI the guest runs as (access credentials follow it). */
  setVmi(vmi: VirtualMachineInstance): void;
  /** What the launcher reports changed (a hotplugged device came or went). */
  changed(): void;
  log(message: string): void;
}

/** One launcher's domain sync. */
export class GuestSync {
  readonly hotplug: LauncherHotplug;
  readonly nics: LauncherNics;
  /** The VMI the guest was started from (after network preparation): hotplug renders from it. */
  private started: VirtualMachineInstance | undefined;

  constructor(private readonly h: GuestSyncHost) {
    this.hotplug = new LauncherHotplug(h.log, h.opts.hotplugDir, h.opts.blockVolumes);
    this.nics = new LauncherNics(h.opts, h.log);
  }

  /**
   * Brings the domain to `parsed`; resolves with whether the guest runs (or ran) here.
   * `running`: the domain is active already.
   */
  async sync(driver: HypervisorDriver, parsed: VirtualMachineInstance, running: boolean): Promise<boolean> {
    if (running) {
      // A running guest: only its hotplugged volumes change (network and volumes are set up).
      this.h.setVmi(parsed);
      await this.syncHotplug(driver, withVolumesOf(this.started ?? parsed, parsed), {
        ...this.h.opts.syncOptions,
      });
      if (await this.nics.sync(driver, parsed)) this.h.changed();
      return true;
    }
    const o = this.h.opts;
    const vmi = o.prepareNetwork ? await o.prepareNetwork(parsed) : parsed;
    await o.prepareVolumes?.(vmi);
    this.h.setVmi(vmi);
    // passt where libvirt cannot start it: before the domain, undone if it does not start.
    await o.networkBackends?.start(vmi, driver);
    const options = { ...o.syncOptions, hotplugReady: await this.hotplug.ready(vmi) };
    const info = await driver.sync(vmi, options).catch(async (e) => {
      await o.networkBackends?.stop().catch((s) => this.h.log(`network backends: ${(s as Error).message}`));
      throw e;
    });
    if (!ACTIVE_STATES.has(info.state)) return false;
    this.started = vmi;
    this.nics.started(vmi);
    await this.syncHotplug(driver, vmi, options);
    return true;
  }

  /** Volume hotplug: the running guest gets its ready disks and loses those taken out (./hotplug-disks). */
  private async syncHotplug(driver: HypervisorDriver, vmi: VirtualMachineInstance, options: SyncOptions) {
    const before = this.hotplug.attached.join();
    await this.hotplug.sync(driver, vmi, { ...options, hotplugReady: await this.hotplug.ready(vmi) });
    if (this.hotplug.attached.join() !== before) this.h.changed();
  }
}
