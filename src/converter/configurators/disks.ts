/**
 * Disks: the device (disk, cdrom, lun) with its bus, target name, driver choices (cache,
 * io, error_policy, discard, queues, iommu), serial, boot order and alias, and the source
 * its volume resolves to: qcow2 overlays on a backing store for containerDisk and
 * ephemeral volumes, files or block devices for PVCs and DataVolumes, qcow2 images for
 * emptyDisk, the given file for hostDisk, and ISO images for cloud-init and config volumes.
 * A CD-ROM without its media (no volume, or a hotplugged one not in place) is an empty drive.
 */
import type { Disk as VMIDisk, Volume } from '../../api/generated/types';
import { type Configurator, type Conversion, userAlias } from '../conversion';
import { DeviceNamer } from '../device-names';
import type { Disk, DiskDriver } from '../domain/types';
import { parsePCIAddress } from '../pci';
import { volumePaths } from '../volume-paths';

const BUSES = ['virtio', 'sata', 'scsi', 'usb'];
const CACHES = ['none', 'writethrough', 'writeback'];
const IOS = ['native', 'threads'];
const ERROR_POLICIES = ['stop', 'report', 'ignore', 'enospace'];

/** A hotpluggable PVC or DataVolume volume: attached live from the hotplug directory. */
export const isHotplugVolume = (v: Volume): boolean =>
  !!(v.persistentVolumeClaim?.hotpluggable || v.dataVolume?.hotpluggable);

type Source = Pick<Disk, 'type' | 'source' | 'backingStore'> & { format: 'raw' | 'qcow2'; block: boolean };

function volumeSource(c: Conversion, vol: Volume, volIndex: number, path: string): Source {
  const p = c.ctx.paths;
  const name = vol.name;
  const isBlock = c.ctx.blockVolumes.has(name);
  const backing = (file: string, block = false): Source => ({
    type: 'file',
    source: { file: volumePaths.overlay(p, name) },
    backingStore: {
      type: block ? 'block' : 'file',
      format: { type: c.ctx.backingFormats[name] ?? 'raw' },
      source: block ? { dev: file } : { file },
    },
    format: 'qcow2',
    block: false,
  });
  if (vol.containerDisk) return backing(volumePaths.containerDiskBacking(p, volIndex));
  if (vol.ephemeral) {
    return isBlock ? backing(volumePaths.blockDevice(p, name), true) : backing(volumePaths.pvcFile(p, name));
  }
  if (isHotplugVolume(vol)) {
    const path = volumePaths.hotplugDisk(p, name, isBlock);
    return isBlock
      ? { type: 'block', source: { dev: path }, format: 'raw', block: true }
      : { type: 'file', source: { file: path }, format: 'raw', block: false };
  }
  if (vol.persistentVolumeClaim || vol.dataVolume) {
    return isBlock
      ? { type: 'block', source: { dev: volumePaths.blockDevice(p, name) }, format: 'raw', block: true }
      : { type: 'file', source: { file: volumePaths.pvcFile(p, name) }, format: 'raw', block: false };
  }
  if (vol.emptyDisk)
    return { type: 'file', source: { file: volumePaths.emptyDisk(p, name) }, format: 'qcow2', block: false };
  if (vol.hostDisk) {
    const file = c.absolutePath(vol.hostDisk.path, `${path}.hostDisk.path`);
    return { type: 'file', source: { file }, format: 'raw', block: false };
  }
  const iso = (file: string): Source => ({ type: 'file', source: { file }, format: 'raw', block: false });
  if (vol.cloudInitNoCloud) return iso(volumePaths.cloudInit(p, c.namespace, c.name, 'noCloud'));
  if (vol.cloudInitConfigDrive) return iso(volumePaths.cloudInit(p, c.namespace, c.name, 'configDrive'));
  for (const kind of ['configMap', 'secret', 'serviceAccount', 'downwardAPI', 'sysprep'] as const) {
    if (vol[kind]) return iso(volumePaths.configDisk(p, kind, name));
  }
  return c.fail(path, `volume '${name}' has a source this converter cannot attach as a disk`);
}

function choose(
  c: Conversion,
  value: string | undefined,
  allowed: string[],
  path: string,
): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (!allowed.includes(value)) c.fail(path, `'${c.line(value, path)}' is not one of ${allowed.join(', ')}`);
  return value;
}

/**
 * A CD-ROM's drive without media (upstream's convert_v1_Missing_Volume_To_api_Disk): a
 * `cdrom` disk with no volume, or whose hotplugged volume is not in place yet. Media is
 * inserted and ejected live (the driver's disk hotplug).
 */
const EMPTY_TRAY: Source = { type: 'block', format: 'raw', block: false };

function convertDisk(
  c: Conversion,
  d: VMIDisk,
  path: string,
  vol: Volume | undefined,
  volIndex: number,
  namer: DeviceNamer,
): Disk {
  const kinds = [d.disk, d.cdrom, d.lun].filter((x) => x !== undefined).length;
  if (kinds > 1) c.fail(path, 'must set only one of disk, cdrom, lun');
  const device = d.cdrom ? 'cdrom' : d.lun ? 'lun' : 'disk';
  const target = d.cdrom ?? d.lun ?? d.disk ?? {};
  const bus =
    choose(c, target.bus, BUSES, `${path}.${device}.bus`) ??
    (device === 'cdrom' ? 'sata' : device === 'lun' ? 'scsi' : 'virtio');
  if (device === 'cdrom' && bus === 'virtio')
    c.fail(`${path}.cdrom.bus`, 'a cdrom cannot use the virtio bus');
  const vpath = `spec.volumes[${volIndex}]`;
  const src = vol ? volumeSource(c, vol, volIndex, vpath) : EMPTY_TRAY;
  if (device === 'lun') {
    if (bus !== 'scsi' && bus !== 'virtio')
      c.fail(`${path}.lun.bus`, `a LUN needs the scsi or virtio bus, not ${bus}`);
    if (!src.block) c.fail(path, `disk '${d.name}' is a LUN, which needs a block volume, not a file`);
    if (d.lun?.reservation)
      c.fail(
        `${path}.lun.reservation`,
        'SCSI persistent reservation (pr-helper) is not supported by this converter yet',
      );
  }
  const { dev, index } = namer.take(bus);
  const cache = choose(c, d.cache, CACHES, `${path}.cache`) ?? (c.ctx.directIO ? 'none' : 'writethrough');
  if (d.shareable && cache !== 'none') c.fail(`${path}.cache`, 'a shareable disk requires cache none');
  if (cache === 'none' && !c.ctx.directIO && d.cache) {
    c.fail(`${path}.cache`, 'cache none needs O_DIRECT, which the disk storage does not support');
  }
  const driver: DiskDriver = {
    name: 'qemu',
    type: src.format,
    cache: cache as DiskDriver['cache'],
    io: (choose(c, d.io, IOS, `${path}.io`) ??
      (src.block && cache === 'none' ? 'native' : undefined)) as DiskDriver['io'],
    error_policy: (choose(c, d.errorPolicy, ERROR_POLICIES, `${path}.errorPolicy`) ??
      'stop') as DiskDriver['error_policy'],
  };
  if (device !== 'cdrom' && vol && !c.ctx.volumesDiscardIgnore.has(vol.name)) driver.discard = 'unmap';
  if (bus === 'virtio' && c.spec.domain.devices.blockMultiQueue) driver.queues = c.vcpus;
  if (bus === 'virtio' && c.iommu) driver.iommu = 'on';
  const disk: Disk = {
    type: src.type,
    device,
    model: bus === 'virtio' ? c.virtioModel() : undefined,
    driver,
    source: src.source,
    backingStore: src.backingStore,
    target: { dev, bus },
    alias: userAlias(d.name),
  };
  if (d.cdrom?.tray)
    disk.target.tray = choose(c, d.cdrom.tray, ['open', 'closed'], `${path}.cdrom.tray`) as 'open' | 'closed';
  const readonly = device === 'cdrom' ? d.cdrom?.readonly !== false : target.readonly === true;
  if (readonly) {
    // QEMU cannot make a SATA hard disk read-only (only a CD-ROM).
    if (device === 'disk' && bus === 'sata')
      c.fail(`${path}.disk.readonly`, 'read-only disks need the virtio, scsi or usb bus, not sata');
    disk.readonly = {};
  }
  if (d.shareable) disk.shareable = {};
  if (d.serial !== undefined) {
    const serial = c.line(d.serial, `${path}.serial`);
    if (!/^[A-Za-z0-9_.+-]{1,36}$/.test(serial)) {
      c.fail(`${path}.serial`, 'must be 1 to 36 characters of letters, digits, "_", ".", "+" or "-"');
    }
    disk.serial = serial;
  }
  if (d.bootOrder !== undefined) {
    if (!Number.isInteger(d.bootOrder) || d.bootOrder < 1)
      c.fail(`${path}.bootOrder`, 'must be a positive integer');
    disk.boot = { order: d.bootOrder };
  }
  if (bus === 'scsi')
    disk.address = { type: 'drive', controller: '0', bus: '0', target: '0', unit: String(index) };
  if (d.disk?.pciAddress) {
    if (bus !== 'virtio') c.fail(`${path}.disk.pciAddress`, 'a PCI address needs the virtio bus');
    const address = parsePCIAddress(d.disk.pciAddress);
    if (!address)
      c.fail(
        `${path}.disk.pciAddress`,
        `'${c.line(d.disk.pciAddress, `${path}.disk.pciAddress`)}' is not a PCI address (dddd:bb:ss.f)`,
      );
    disk.address = address;
  }
  const custom = d.blockSize?.custom;
  if (custom) disk.blockio = { logical_block_size: custom.logical, physical_block_size: custom.physical };
  else if (d.blockSize?.matchVolume && d.blockSize.matchVolume.enabled !== false) {
    const probed = vol ? c.ctx.volumeBlockSizes[vol.name] : undefined;
    if (!probed)
      c.fail(
        `${path}.blockSize.matchVolume`,
        `no block sizes probed for volume '${d.name}' in the converter context (volumeBlockSizes)`,
      );
    disk.blockio = { logical_block_size: probed.logical, physical_block_size: probed.physical };
  }
  return disk;
}

export const disksConfigurator: Configurator = {
  name: 'disks',
  configure(c: Conversion) {
    const volumes = c.spec.volumes ?? [];
    const byName = new Map(volumes.map((v, i) => [v.name, { vol: v, index: i }]));
    volumes.forEach((v, i) => {
      c.segment(v.name, `spec.volumes[${i}].name`);
    });
    const namer = new DeviceNamer();
    const seen = new Set<string>();
    const ready = c.ctx.hotplugReadyVolumes ?? new Set<string>();
    const disks: Disk[] = [];
    (c.spec.domain.devices.disks ?? []).forEach((d, i) => {
      const path = `spec.domain.devices.disks[${i}]`;
      c.segment(d.name, `${path}.name`);
      if (seen.has(d.name)) c.fail(`${path}.name`, `duplicate disk name '${d.name}'`);
      seen.add(d.name);
      const found = byName.get(d.name);
      // A CD-ROM without a volume is an empty tray (upstream's DeclarativeHotplugVolumes).
      if (!found && !d.cdrom) c.fail(`${path}.name`, `no volume named '${d.name}' in spec.volumes`);
      // A hotplug volume's disk joins the domain once it is in the hotplug directory; a
      // CD-ROM's drive is there from the start, empty until its media is.
      const notReady = found && isHotplugVolume(found.vol) && !ready.has(d.name);
      if (notReady && !d.cdrom) return;
      const media = found && !notReady ? found : undefined;
      disks.push(convertDisk(c, d, path, media?.vol, media?.index ?? -1, namer));
    });
    c.domain.devices.disk = disks;
    if (c.domain.devices.disk.length === 0) delete c.domain.devices.disk;
  },
};
