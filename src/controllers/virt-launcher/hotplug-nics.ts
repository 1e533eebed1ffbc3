/**
 * Hotplugged NICs in the launcher (upstream's launcher hotplugVirtioInterface and
 * hotUnplugVirtioInterface, run on each SyncVMI of a running guest): a bridge interface on
 * a secondary network is plugged once the node agent's network setup (phase 1) made its
 * pod side, i.e. once it is in the network cache: on a pod created with it (after the
 * migration virt-controller asked for), never on the pod the VMI ran in when the NIC was
 * added; an interface set `absent` is unplugged. The interfaces on secondary networks the
 * domain has are reported (LauncherDomain.secondaryInterfaces) for status.interfaces.
 */
import type { VirtualMachineInstance } from '../../api/generated/types';
import type { HypervisorDriver } from '../../drivers/driver';
import { isSecondaryMultus } from '../common/multus';
import type { VirtLauncherOptions } from './launcher-options';

/** The VMI's interfaces on secondary multus networks (not SR-IOV), with their state. */
function secondaryInterfaces(vmi: VirtualMachineInstance) {
  const secondary = new Set((vmi.spec.networks ?? []).filter(isSecondaryMultus).map((n) => n.name));
  return (vmi.spec.domain.devices.interfaces ?? []).filter((i) => secondary.has(i.name) && !i.sriov);
}

export class LauncherNics {
  /** The VMI's interfaces on secondary networks the domain has; undefined until known. */
  have: string[] | undefined;

  constructor(
    private readonly o: Pick<VirtLauncherOptions, 'prepareNetwork' | 'networkReport' | 'syncOptions'>,
    private readonly log: (m: string) => void,
  ) {}

  /** The guest was started from `vmi`: it has those of its interfaces that are not absent. */
  started(vmi: VirtualMachineInstance): void {
    this.have = secondaryInterfaces(vmi)
      .filter((i) => i.state !== 'absent')
      .map((i) => i.name);
  }

  /**
   * Plugs and unplugs so the running domain matches `parsed`; resolves with whether what
   * the domain has changed (drivers without NIC hotplug: nothing, false).
   */
  async sync(driver: HypervisorDriver, parsed: VirtualMachineInstance): Promise<boolean> {
    if (!driver.nicHotplug) return false;
    const ifaces = secondaryInterfaces(parsed);
    if (this.have !== undefined) {
      const wanted = ifaces.filter((i) => i.state !== 'absent').map((i) => i.name);
      if (wanted.length === this.have.length && wanted.every((n) => this.have?.includes(n))) return false;
    } else if (ifaces.length === 0) {
      this.have = [];
      return true;
    }
    // The cached MACs (the converter renders the NIC with the one the pod side has).
    const vmi = this.o.prepareNetwork ? await this.o.prepareNetwork(parsed) : parsed;
    const ready = new Set((this.o.networkReport?.() ?? []).map((i) => i.name));
    const t0 = performance.now();
    const names = new Set(ifaces.map((i) => i.name));
    const live = (await driver.nicHotplug.syncInterfaces(vmi, ready, this.o.syncOptions ?? {})).filter((n) =>
      names.has(n),
    );
    const before = this.have ?? [];
    this.have = live;
    const added = live.filter((n) => !before.includes(n));
    const removed = before.filter((n) => !live.includes(n));
    // The driver's own time for the change (the hotplug BENCH's reference reads it).
    if (added.length || removed.length)
      this.log(
        `nic hotplug: attached [${added.join(',')}] detached [${removed.join(',')}] in ${(performance.now() - t0).toFixed(0)} ms`,
      );
    return true;
  }
}
