/**
 * Volume hotplug through libvirt (upstream's launcher hotplugging disks with
 * virDomainAttachDeviceFlags / DetachDeviceFlags, AFFECT_LIVE): the domain the VMI renders
 * to now is compared with the live domain by disk alias (`ua-<volume>`); hotplugged disks
 * are the live ones whose source is in the hotplug directory. Missing ready disks are
 * attached (on a free target name: the live domain's names win), disks whose volume left
 * the spec are detached, and a detach is waited for until the guest has let the device go.
 * A CD-ROM drive stays: its media is changed instead (upstream's getUpdatedDisks and
 * virDomainUpdateDeviceFlags): inserted when its hotplugged volume is ready, ejected when
 * the volume left the spec.
 */

import type { VirtualMachineInstance } from '../../api';
import { type Disk, type Domain, decodeDomain, encodeDevice, HOTPLUG_DISK_DIR } from '../../converter';
import { type DiskHotplugSupport, type DomainRef, refOf, type SyncOptions } from '../driver';
import { DriverError } from '../errors';
import { AffectFlags, type LibvirtClient, type DomainRef as LibvirtDomain } from '../libvirt';

export interface DiskHotplugDeps {
  client: () => LibvirtClient;
  lookupActive: (ref: DomainRef, op: string) => Promise<LibvirtDomain>;
  call: <T>(name: string, op: string, fn: () => Promise<T>) => Promise<T>;
  render: (vmi: VirtualMachineInstance, options: SyncOptions) => Promise<{ domain: Domain }>;
  /** The launcher's hotplug directory (the converter context's `paths.hotplugDiskDir`). */
  hotplugDir?: () => string | undefined;
  /** How often a detach is looked at (default 100 ms). */
  pollMs?: number;
}

const volumeOf = (d: Disk) => (d.alias?.name?.startsWith('ua-') ? d.alias.name.slice(3) : undefined);

/** The first target name with `dev`'s prefix (`vd`, `sd`) no live disk uses (a..z, then aa..zz). */
export function freeTarget(dev: string, used: ReadonlySet<string>): string {
  if (!used.has(dev)) return dev;
  const prefix = dev.slice(0, 2);
  const letter = (i: number) => String.fromCharCode(97 + i);
  for (let n = 0; n < 26 + 26 * 26; n++) {
    const suffix = n < 26 ? letter(n) : letter(Math.floor((n - 26) / 26)) + letter((n - 26) % 26);
    if (!used.has(prefix + suffix)) return prefix + suffix;
  }
  throw new DriverError('Invalid', `no free disk target name with prefix ${prefix}`);
}

/** Disk hotplug over libvirt. */
export function libvirtDiskHotplug(d: DiskHotplugDeps): DiskHotplugSupport {
  const dir = () => `${d.hotplugDir?.() ?? HOTPLUG_DISK_DIR}/`;
  const hotplugged = (x: Disk) => (x.source?.file ?? x.source?.dev ?? '').startsWith(dir());
  const liveDisks = async (dom: LibvirtDomain): Promise<Disk[]> => {
    const text = await d.call(dom.name, 'read XML', () => d.client().domainGetXMLDesc(dom));
    return decodeDomain(text).devices?.disk ?? [];
  };

  const attachDevice = async (ref: DomainRef, xml: string) => {
    const dom = await d.lookupActive(ref, 'attach a device');
    await d.call(dom.name, 'attach a device', () =>
      d.client().domainAttachDevice(dom, xml, AffectFlags.LIVE),
    );
  };

  const detachDevice = async (ref: DomainRef, xml: string, timeoutMs = 60_000) => {
    const dom = await d.lookupActive(ref, 'detach a device');
    const alias = /<alias name="([^"]+)"/.exec(xml)?.[1];
    const target = /<target dev="([^"]+)"/.exec(xml)?.[1];
    await d.call(dom.name, 'detach a device', () =>
      d.client().domainDetachDevice(dom, xml, AffectFlags.LIVE),
    );
    // The guest acknowledges the unplug (PCI: after its attention-button delay): wait for it.
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const still = (await liveDisks(dom)).some(
        (x) => (alias && x.alias?.name === alias) || (!alias && x.target.dev === target),
      );
      if (!still) return;
      if (Date.now() > deadline)
        throw new DriverError(
          'Hypervisor',
          `domain ${dom.name}: the guest did not release disk ${alias ?? target} within ${timeoutMs} ms`,
        );
      await new Promise((r) => setTimeout(r, d.pollMs ?? 100));
    }
  };

  /**
   * Inserts `wanted`'s media into the live drive with its alias, or ejects it (upstream's
   * getUpdatedDisks): the live device with the wanted source (none: empty), raw, updated
   * live. Only a drive whose media is or becomes hotplugged (or empty) is touched.
   */
  const changeMedia = async (dom: LibvirtDomain, live: Disk[], wanted: Disk) => {
    const drive = live.find((y) => y.device === 'cdrom' && y.alias?.name === wanted.alias?.name);
    if (!drive) return;
    const path = (x: Disk) => x.source?.file ?? x.source?.dev ?? '';
    if (path(drive) === path(wanted)) return;
    const hotOrEmpty = (x: Disk) => path(x) === '' || hotplugged(x);
    if (!hotOrEmpty(drive) || !hotOrEmpty(wanted)) return;
    const next: Disk = {
      ...drive,
      type: wanted.source?.file ? 'file' : 'block',
      driver: { ...drive.driver, name: 'qemu', type: 'raw' },
      source: path(wanted) === '' ? undefined : wanted.source,
    };
    delete next.backingStore;
    await d.call(dom.name, 'change CD-ROM media', () =>
      d.client().domainUpdateDevice(dom, encodeDevice('disk', next), AffectFlags.LIVE),
    );
  };

  const syncDisks = async (vmi: VirtualMachineInstance, options: SyncOptions, timeoutMs?: number) => {
    const ref = refOf(vmi);
    const dom = await d.lookupActive(ref, 'hotplug disks');
    const wanted = new Set(
      (vmi.spec.volumes ?? [])
        .filter((v) => v.dataVolume?.hotpluggable || v.persistentVolumeClaim?.hotpluggable)
        .map((v) => v.name),
    );
    let live = await liveDisks(dom);
    for (const x of live.filter((y) => hotplugged(y) && y.device !== 'cdrom')) {
      const name = volumeOf(x);
      if (name === undefined || !wanted.has(name))
        await detachDevice(ref, encodeDevice('disk', x), timeoutMs);
    }
    const { domain } = await d.render(vmi, options);
    live = await liveDisks(dom);
    const have = new Set(live.map(volumeOf));
    const used = new Set(live.map((x) => x.target.dev));
    for (const x of domain.devices?.disk ?? []) {
      const name = volumeOf(x);
      if (x.device === 'cdrom') {
        await changeMedia(dom, live, x);
        continue;
      }
      if (!hotplugged(x) || name === undefined || have.has(name)) continue;
      const disk: Disk = { ...x, target: { ...x.target, dev: freeTarget(x.target.dev, used) } };
      // libvirt picks a free controller unit or PCI slot; the boot-time numbering may be taken.
      delete disk.address;
      used.add(disk.target.dev);
      await attachDevice(ref, encodeDevice('disk', disk));
    }
    return (await liveDisks(dom))
      .filter(hotplugged)
      .map(volumeOf)
      .filter((n): n is string => n !== undefined);
  };

  return { syncDisks, attachDevice, detachDevice };
}
