/**
 * The disks a block migration copies (upstream's getDiskTargetsForMigration): file and
 * block disks but CD-ROMs, read-only disks unless generated, and shared volumes.
 */
import { describe, expect, it } from 'vitest';
import { migrationDiskTargets } from '../../../src/drivers/libvirt-driver/migration-disks';

const disk = (o: { type?: string; device?: string; dev: string; alias: string; readonly?: boolean }) =>
  `<disk type="${o.type ?? 'file'}" device="${o.device ?? 'disk'}"><source file="/x/${o.alias}"/>` +
  `<target dev="${o.dev}" bus="virtio"/>${o.readonly ? '<readonly/>' : ''}<alias name="${o.alias}"/></disk>`;

const xml = `<domain type="qemu"><name>ns_vm</name><devices>${[
  disk({ dev: 'vda', alias: 'ua-root' }),
  disk({ dev: 'vdb', alias: 'ua-ci', readonly: true }),
  disk({ dev: 'vdc', alias: 'ua-data' }),
  disk({ dev: 'vdd', alias: 'ua-scratch' }),
  disk({ dev: 'sda', alias: 'ua-iso', device: 'cdrom', readonly: true }),
  disk({ dev: 'vde', alias: 'ua-ro', readonly: true }),
  disk({ dev: 'vdf', alias: 'ua-net', type: 'network' }),
  disk({ dev: 'vdg', alias: 'ua-blk', type: 'block' }),
].join('')}</devices></domain>`;

describe('migrationDiskTargets', () => {
  it('copies local and generated disks, never CD-ROMs, shared volumes, plain read-only or network disks', () => {
    expect(migrationDiskTargets(xml, { shared: ['data'], generated: ['root', 'ci'] })).toEqual([
      'vda',
      'vdb',
      'vdd',
      'vdg',
    ]);
  });

  it('a domain with one disk: that disk', () => {
    const one = `<domain><devices>${disk({ dev: 'vda', alias: 'ua-root' })}</devices></domain>`;
    expect(migrationDiskTargets(one, { shared: [], generated: ['root'] })).toEqual(['vda']);
  });

  it('refuses what is not a domain', () => {
    expect(() => migrationDiskTargets('<network/>', { shared: [], generated: [] })).toThrow(
      'not a <domain> document',
    );
  });
});
