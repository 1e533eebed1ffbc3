/**
 * Hotplugged volumes in the converter: a hotpluggable PVC/DataVolume's disk joins the
 * domain only once its file is in the hotplug directory (the context's
 * hotplugReadyVolumes), from `<hotplug dir>/<volume>.img` (or the device `<volume>`), and
 * a device alone encodes as the `<disk>` libvirt's attach takes.
 */
import { describe, expect, it } from 'vitest';
import { disksConfigurator } from '../../../src/converter/configurators';
import { encodeDevice } from '../../../src/converter/domain';
import { testContext } from '../support/contexts';
import { run, vmi } from '../support/run';

const spec = vmi({
  volumes: [
    { name: 'root', containerDisk: { image: 'x' } },
    { name: 'data', persistentVolumeClaim: { claimName: 'c', hotpluggable: true } },
  ],
  domain: {
    devices: {
      disks: [
        { name: 'root', disk: { bus: 'virtio' } },
        { name: 'data', disk: { bus: 'virtio' }, serial: 'S1' },
      ],
    },
  },
});

describe('hotplug volumes in the disks configurator', () => {
  it('leaves a hotplug disk out until the node agent has put its file in place', () => {
    const d = run([disksConfigurator], spec);
    expect(d.devices.disk?.map((x) => x.alias?.name)).toEqual(['ua-root']);
  });

  it('reads a ready filesystem volume from <hotplug dir>/<volume>.img, a block one from <dir>/<volume>', () => {
    const d = run([disksConfigurator], spec, testContext({ hotplugReadyVolumes: new Set(['data']) }));
    const disk = d.devices.disk?.[1];
    expect(disk?.source).toEqual({ file: '/var/run/kubevirt/hotplug-disks/data.img' });
    expect(disk?.serial).toBe('S1');
    expect(disk?.target).toEqual({ dev: 'vdb', bus: 'virtio' });
    const b = run(
      [disksConfigurator],
      spec,
      testContext({ hotplugReadyVolumes: new Set(['data']), blockVolumes: new Set(['data']) }),
    );
    expect(b.devices.disk?.[1]).toMatchObject({
      type: 'block',
      source: { dev: '/var/run/kubevirt/hotplug-disks/data' },
    });
  });

  it('encodes one disk device as libvirt attach-device XML', () => {
    const d = run([disksConfigurator], spec, testContext({ hotplugReadyVolumes: new Set(['data']) }));
    const xml = encodeDevice('disk', d.devices.disk?.[1]);
    expect(xml).toContain('<disk type="file" device="disk"');
    expect(xml).toContain('<source file="/var/run/kubevirt/hotplug-disks/data.img"/>');
    expect(xml).toContain('<serial>S1</serial>');
    expect(xml).toContain('<alias name="ua-data"/>');
    expect(() => encodeDevice('nonsense', {})).toThrow('devices.nonsense: not a device element');
  });
});
