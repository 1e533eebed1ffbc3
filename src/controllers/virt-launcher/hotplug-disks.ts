/**
 * Hotplugged volumes in the launcher (upstream's launcher hotplug of disks): a hotpluggable
 * volume's disk is ready once the node agent has mounted it into the pod's hotplug
 * directory and said so in `status.volumeStatus` (phase MountedToPod, or Ready once
 * attached); the driver then attaches the ready disks the domain lacks and detaches those
 * whose volume left the spec. What the domain has is reported to the node agent
 * (LauncherDomain.hotplugVolumes), which moves the volumes to Ready or unmounts them.
 */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { VirtualMachineInstance } from '../../api/generated/types';
import type { HypervisorDriver, SyncOptions } from '../../drivers/driver';
import { LAUNCHER_DIRS } from '../common/launcher-args';

/** Phases in which the node agent has the disk in the hotplug directory. */
const IN_POD = new Set(['MountedToPod', 'Ready']);

export class LauncherHotplug {
  /** The hotplugged volumes the domain has, as the driver last said. */
  attached: string[] = [];

  constructor(
    private readonly log: (m: string) => void,
    private readonly dir: string = LAUNCHER_DIRS.hotplugDisks,
    /** The converter's block volumes: a hotplugged volume whose node is a block device joins it. */
    private readonly blockVolumes?: Set<string>,
  ) {}

  /**
   * The hotpluggable volumes of `vmi` whose disk is in place: file `<name>.img`, or block
   * device `<name>` (a block-mode claim; recorded in the block volumes, so the disk is
   * rendered as a `block` disk).
   */
  async ready(vmi: VirtualMachineInstance): Promise<Set<string>> {
    const phase = new Map((vmi.status?.volumeStatus ?? []).map((s) => [s.name, s.phase]));
    const out = new Set<string>();
    for (const v of vmi.spec.volumes ?? []) {
      if (!(v.dataVolume?.hotpluggable || v.persistentVolumeClaim?.hotpluggable)) continue;
      if (!IN_POD.has(phase.get(v.name) ?? '')) continue;
      const file = await stat(join(this.dir, `${v.name}.img`)).catch(() => undefined);
      const dev = file ? undefined : await stat(join(this.dir, v.name)).catch(() => undefined);
      if (dev?.isBlockDevice()) this.blockVolumes?.add(v.name);
      else this.blockVolumes?.delete(v.name);
      if (file?.isFile() || dev?.isBlockDevice()) out.add(v.name);
    }
    return out;
  }

  /** Attaches and detaches so the running domain matches `vmi` (drivers without hotplug: nothing). */
  async sync(driver: HypervisorDriver, vmi: VirtualMachineInstance, options: SyncOptions): Promise<void> {
    if (!driver.hotplug) return;
    const t0 = performance.now();
    const before = new Set(this.attached);
    this.attached = await driver.hotplug.syncDisks(vmi, options);
    const added = this.attached.filter((n) => !before.has(n));
    const removed = [...before].filter((n) => !this.attached.includes(n));
    // The driver's own time for the change (the hotplug BENCH's reference reads it).
    if (added.length || removed.length)
      this.log(
        `hotplug: attached [${added.join(',')}] detached [${removed.join(',')}] in ${(performance.now() - t0).toFixed(0)} ms`,
      );
  }
}

/** The guest's VMI as it was started (network set up) with `now`'s volumes, disks and status. */
export function withVolumesOf(
  started: VirtualMachineInstance,
  now: VirtualMachineInstance,
): VirtualMachineInstance {
  return {
    ...started,
    spec: {
      ...started.spec,
      volumes: now.spec.volumes,
      domain: {
        ...started.spec.domain,
        devices: { ...started.spec.domain.devices, disks: now.spec.domain.devices.disks },
      },
    },
    status: now.status,
  };
}
