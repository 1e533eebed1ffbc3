import { describe, expect, it } from 'vitest';
import { disksConfigurator } from '../../../src/converter/configurators';
import { testContext } from '../support/contexts';
import { run, vmi } from '../support/run';

const cd = { name: 'root', containerDisk: { image: 'x' } };

describe('disks configurator', () => {
  it('puts a containerDisk on a qcow2 overlay over its backing image', () => {
    const d = run(
      [disksConfigurator],
      vmi({ volumes: [cd], domain: { devices: { disks: [{ name: 'root', disk: { bus: 'virtio' } }] } } }),
    );
    expect(d.devices.disk).toEqual([
      {
        type: 'file',
        device: 'disk',
        model: 'virtio-non-transitional',
        driver: { name: 'qemu', type: 'qcow2', cache: 'none', error_policy: 'stop', discard: 'unmap' },
        source: { file: '/var/run/kubevirt-ephemeral-disks/disk-data/root/disk.qcow2' },
        backingStore: {
          type: 'file',
          format: { type: 'raw' },
          source: { file: '/var/run/kubevirt/container-disks/disk_0.img' },
        },
        target: { dev: 'vda', bus: 'virtio' },
        alias: { name: 'ua-root' },
      },
    ]);
  });

  it('names targets per bus prefix in disk order and addresses SCSI units', () => {
    const vols = ['a', 'b', 'c', 'd'].map((n) => ({ name: n, emptyDisk: { capacity: '1Gi' } }));
    const d = run(
      [disksConfigurator],
      vmi({
        volumes: vols,
        domain: {
          devices: {
            disks: [
              { name: 'a', disk: { bus: 'virtio' } },
              { name: 'b', disk: { bus: 'sata' } },
              { name: 'c', disk: { bus: 'scsi' } },
              { name: 'd', disk: { bus: 'virtio' } },
            ],
          },
        },
      }),
    );
    expect(d.devices.disk!.map((x) => x.target.dev)).toEqual(['vda', 'sda', 'sdb', 'vdb']);
    expect(d.devices.disk![2].address).toEqual({
      type: 'drive',
      controller: '0',
      bus: '0',
      target: '0',
      unit: '1',
    });
  });

  it('chooses writethrough when the storage lacks O_DIRECT and native io for block devices', () => {
    const spec = vmi({
      volumes: [{ name: 'p', persistentVolumeClaim: { claimName: 'p' } }],
      domain: { devices: { disks: [{ name: 'p', disk: { bus: 'virtio' } }] } },
    });
    const noDirect = run([disksConfigurator], spec, testContext({ directIO: false }));
    expect(noDirect.devices.disk![0].driver!.cache).toBe('writethrough');
    const block = run([disksConfigurator], spec, testContext({ blockVolumes: new Set(['p']) }));
    expect(block.devices.disk![0]).toMatchObject({
      type: 'block',
      source: { dev: '/dev/p' },
      driver: { cache: 'none', io: 'native' },
    });
  });

  it('takes matchVolume block sizes from the context, and fails when none were probed', () => {
    const spec = vmi({
      volumes: [cd],
      domain: {
        devices: { disks: [{ name: 'root', blockSize: { matchVolume: {} }, disk: { bus: 'virtio' } }] },
      },
    });
    expect(
      run(
        [disksConfigurator],
        spec,
        testContext({ volumeBlockSizes: { root: { logical: 512, physical: 4096 } } }),
      ).devices.disk![0].blockio,
    ).toEqual({ logical_block_size: 512, physical_block_size: 4096 });
    expect(() => run([disksConfigurator], spec)).toThrow(
      /disks\[0\]\.blockSize\.matchVolume: no block sizes probed for volume 'root'/,
    );
  });

  it('makes cdroms read-only with a tray, and never discards on them', () => {
    const d = run(
      [disksConfigurator],
      vmi({
        volumes: [{ name: 'cfg', configMap: { name: 'c' } }],
        domain: { devices: { disks: [{ name: 'cfg', cdrom: { bus: 'sata', tray: 'closed' } }] } },
      }),
    );
    expect(d.devices.disk![0]).toMatchObject({
      device: 'cdrom',
      readonly: {},
      target: { tray: 'closed' },
      source: { file: '/var/run/kubevirt-private/config-map-disks/cfg.iso' },
    });
    expect(d.devices.disk![0].driver!.discard).toBeUndefined();
  });

  it('rejects bad serials, missing volumes, relative host paths and file-backed LUNs with field paths', () => {
    const base = (disk: object, vol: object = cd) =>
      vmi({ volumes: [vol as never], domain: { devices: { disks: [{ name: 'root', ...disk } as never] } } });
    expect(() => run([disksConfigurator], base({ serial: 'a\nb', disk: {} }))).toThrow(
      'spec.domain.devices.disks[0].serial: must be a single line (no line breaks)',
    );
    expect(() => run([disksConfigurator], base({ serial: '</serial>', disk: {} }))).toThrow(
      /disks\[0\]\.serial: must be 1 to 36 characters/,
    );
    expect(() =>
      run([disksConfigurator], vmi({ domain: { devices: { disks: [{ name: 'x', disk: {} }] } } })),
    ).toThrow("spec.domain.devices.disks[0].name: no volume named 'x' in spec.volumes");
    expect(() =>
      run(
        [disksConfigurator],
        base({ disk: {} }, { name: 'root', hostDisk: { path: 'rel/x.img', type: 'Disk' } }),
      ),
    ).toThrow('spec.volumes[0].hostDisk.path: must be an absolute path');
    expect(() =>
      run(
        [disksConfigurator],
        base({ disk: {} }, { name: 'root', hostDisk: { path: '/a/../etc/shadow', type: 'Disk' } }),
      ),
    ).toThrow(/hostDisk\.path: must not contain/);
    expect(() =>
      run(
        [disksConfigurator],
        base({ lun: { bus: 'scsi' } }, { name: 'root', persistentVolumeClaim: { claimName: 'p' } }),
      ),
    ).toThrow(/LUN, which needs a block volume/);
    expect(() => run([disksConfigurator], base({ disk: { bus: 'sata', readonly: true } }))).toThrow(
      'spec.domain.devices.disks[0].disk.readonly: read-only disks need the virtio, scsi or usb bus, not sata',
    );
    expect(() => run([disksConfigurator], base({ cache: 'unsafe', disk: {} }))).toThrow(
      "spec.domain.devices.disks[0].cache: 'unsafe' is not one of none, writethrough, writeback",
    );
  });
});
