/**
 * CD-ROM drives without media (upstream's DeclarativeHotplugVolumes: a `cdrom` disk with no
 * volume is an empty tray; a hotpluggable volume for it is the media): the drive is in the
 * domain from the start, empty (`type="block"`, raw, no source) until the media's file is
 * in the hotplug directory, then its source; the tray attribute as upstream's.
 */
import { describe, expect, it } from 'vitest';
import { disksConfigurator } from '../../../src/converter/configurators';
import { encodeDevice } from '../../../src/converter/domain';
import { testContext } from '../support/contexts';
import { run, vmi } from '../support/run';

const disks = [
  { name: 'root', disk: { bus: 'virtio' } },
  { name: 'cd', cdrom: { bus: 'sata' } },
];
const root = { name: 'root', containerDisk: { image: 'x' } };

describe('CD-ROM trays in the disks configurator', () => {
  it('renders a cdrom disk without a volume as an empty read-only drive', () => {
    const d = run([disksConfigurator], vmi({ volumes: [root], domain: { devices: { disks } } }));
    const cd = d.devices.disk?.[1];
    expect(cd).toMatchObject({
      type: 'block',
      device: 'cdrom',
      driver: { name: 'qemu', type: 'raw' },
      target: { dev: 'sda', bus: 'sata' },
      alias: { name: 'ua-cd' },
      readonly: {},
    });
    expect(cd?.source).toBeUndefined();
    expect(cd?.driver?.discard).toBeUndefined();
    const xml = encodeDevice('disk', cd);
    expect(xml).toContain('<disk type="block" device="cdrom">');
    expect(xml).not.toContain('<source');
  });

  it('is empty while its hotplugged media is not in place, then reads it from the hotplug directory', () => {
    const spec = vmi({
      volumes: [root, { name: 'cd', persistentVolumeClaim: { claimName: 'iso', hotpluggable: true } }],
      domain: { devices: { disks } },
    });
    const empty = run([disksConfigurator], spec).devices.disk?.[1];
    expect(empty).toMatchObject({ type: 'block', device: 'cdrom', target: { dev: 'sda' } });
    expect(empty?.source).toBeUndefined();
    const full = run([disksConfigurator], spec, testContext({ hotplugReadyVolumes: new Set(['cd']) })).devices
      .disk?.[1];
    expect(full).toMatchObject({
      type: 'file',
      device: 'cdrom',
      source: { file: '/var/run/kubevirt/hotplug-disks/cd.img' },
      target: { dev: 'sda', bus: 'sata' },
      alias: { name: 'ua-cd' },
    });
  });

  it('keeps the tray attribute, as upstream', () => {
    const d = run(
      [disksConfigurator],
      vmi({
        volumes: [root],
        domain: { devices: { disks: [disks[0]!, { name: 'cd', cdrom: { tray: 'open' } }] } },
      }),
    );
    expect(d.devices.disk?.[1]?.target).toEqual({ dev: 'sda', bus: 'sata', tray: 'open' });
  });

  it('a disk (not a cdrom) without a volume is still an error naming the field', () => {
    expect(() =>
      run(
        [disksConfigurator],
        vmi({ volumes: [root], domain: { devices: { disks: [disks[0]!, { name: 'x', disk: {} }] } } }),
      ),
    ).toThrow(/spec.domain.devices.disks\[1\].name.*no volume named 'x'/);
  });
});
