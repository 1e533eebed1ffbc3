/**
 * Which disks a block migration copies, as upstream's launcher picks them
 * (getDiskTargetsForMigration in live-migration-source.go): every file or block disk of
 * the running domain except CD-ROMs, read-only disks (unless generated: cloud-init,
 * config volumes, containerDisks, which the target recreates but whose guest-visible
 * state travels) and disks of shared volumes. Returned as target device names, libvirt's
 * `migrate_disks`.
 */
import { XMLParser } from 'fast-xml-parser';

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  isArray: (name) => name === 'disk',
});

type Node = Record<string, unknown>;
const attr = (v: unknown, name: string): string | undefined => {
  const a = (v as Node | undefined)?.[`@_${name}`];
  return typeof a === 'string' ? a : undefined;
};

/** The volumes a block migration treats specially (VMI volume names). */
export interface BlockMigrationVolumes {
  /** Shared volumes (ReadWriteMany claims, shared host disks): never copied. */
  shared: string[];
  /** Volumes the launcher generates (cloud-init, config volumes, containerDisks): copied even when read-only. */
  generated: string[];
}

/** The target devices of the disks to copy (VMI volume `x` is disk alias `ua-x`). */
export function migrationDiskTargets(liveXml: string, volumes: BlockMigrationVolumes): string[] {
  const domain = parser.parse(liveXml)?.domain as Node | undefined;
  if (!domain) throw new Error('not a <domain> document');
  const disks = ((domain.devices as Node | undefined)?.disk ?? []) as Node[];
  const shared = new Set(volumes.shared);
  const generated = new Set(volumes.generated);
  const out: string[] = [];
  for (const disk of disks) {
    const dev = attr(disk.target, 'dev');
    if (!dev || attr(disk, 'device') === 'cdrom') continue;
    const alias = attr(disk.alias, 'name') ?? '';
    const volume = alias.startsWith('ua-') ? alias.slice(3) : alias;
    if (disk.readonly !== undefined && !generated.has(volume)) continue;
    const type = attr(disk, 'type');
    if ((type !== 'file' && type !== 'block') || shared.has(volume)) continue;
    out.push(dev);
  }
  return out;
}
