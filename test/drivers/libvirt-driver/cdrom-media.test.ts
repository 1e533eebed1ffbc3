/**
 * CD-ROM media through the libvirt driver's disk hotplug against a stub client (upstream's
 * getUpdatedDisks): a drive whose hotplugged volume is ready gets its media by
 * virDomainUpdateDeviceFlags (live) on the live drive's target, a drive whose volume left
 * the spec is ejected (no source), never detached; the launcher reports the media as a
 * hotplugged volume while it is in.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { convertVMI, type Domain, defaultConverterContext } from '../../../src/converter';
import type { LibvirtClient } from '../../../src/drivers/libvirt';
import { libvirtDiskHotplug } from '../../../src/drivers/libvirt-driver/disk-hotplug';

const DIR = '/var/run/kubevirt/hotplug-disks';
const vmi = (media: boolean): VirtualMachineInstance =>
  ({
    metadata: { name: 'v', namespace: 'ns', uid: 'u' },
    spec: {
      domain: {
        devices: {
          disks: [
            { name: 'root', disk: { bus: 'virtio' } },
            { name: 'cd', cdrom: { bus: 'sata' } },
          ],
        },
        resources: { requests: { memory: '64Mi' } },
      },
      volumes: [
        { name: 'root', containerDisk: { image: 'x' } },
        ...(media ? [{ name: 'cd', persistentVolumeClaim: { claimName: 'iso', hotpluggable: true } }] : []),
      ],
    },
  }) as VirtualMachineInstance;

const rootDisk =
  '<disk type="file" device="disk"><source file="/r/root.qcow2"/><target dev="vda" bus="virtio"/><alias name="ua-root"/></disk>';
const drive = (source: string) =>
  `<disk type="${source ? 'file' : 'block'}" device="cdrom"><driver name="qemu" type="raw"/>${source}<target dev="sdb" bus="sata"/><readonly/><alias name="ua-cd"/><address type="drive" controller="0" bus="0" target="0" unit="1"/></disk>`;

function stub(initial: string) {
  let xml = initial;
  const calls: string[] = [];
  const client = {
    domainGetXMLDesc: async () =>
      `<domain type="qemu"><name>ns_v</name><os><type>hvm</type></os><devices>${xml}</devices></domain>`,
    domainUpdateDevice: async (_d: unknown, dev: string) => {
      calls.push(`update ${dev}`);
      xml = rootDisk + dev;
    },
    domainAttachDevice: async (_d: unknown, dev: string) => calls.push(`attach ${dev}`),
    domainDetachDevice: async (_d: unknown, dev: string) => calls.push(`detach ${dev}`),
  } as unknown as LibvirtClient;
  const hp = libvirtDiskHotplug({
    client: () => client,
    lookupActive: async () => ({ name: 'ns_v', uuid: 'x', id: 1 }),
    call: (_n, _o, fn) => fn(),
    render: async (v, o) => ({
      domain: convertVMI(v, defaultConverterContext({ hotplugReadyVolumes: o.hotplugReady })) as Domain,
    }),
    hotplugDir: () => DIR,
    pollMs: 1,
  });
  return { hp, calls };
}

describe('CD-ROM media in the libvirt disk hotplug', () => {
  it('inserts ready media into the live drive (its target and address), then reports it', async () => {
    const s = stub(rootDisk + drive(''));
    // Not ready yet: the drive stays empty, nothing called.
    expect(await s.hp.syncDisks(vmi(true), { hotplugReady: new Set() })).toEqual([]);
    expect(s.calls).toEqual([]);
    expect(await s.hp.syncDisks(vmi(true), { hotplugReady: new Set(['cd']) })).toEqual(['cd']);
    expect(s.calls).toHaveLength(1);
    const update = s.calls[0] ?? '';
    expect(update).toMatch(/^update <disk type="file" device="cdrom">/);
    expect(update).toContain(`<source file="${DIR}/cd.img"/>`);
    expect(update).toContain('<target dev="sdb" bus="sata"/>');
    expect(update).toContain('<driver name="qemu" type="raw"/>');
    expect(update).toContain('<alias name="ua-cd"/>');
    // In: nothing more to do.
    await s.hp.syncDisks(vmi(true), { hotplugReady: new Set(['cd']) });
    expect(s.calls).toHaveLength(1);
  });

  it('ejects the media when its volume left the spec: the drive stays, empty', async () => {
    const s = stub(rootDisk + drive(`<source file="${DIR}/cd.img"/>`));
    expect(await s.hp.syncDisks(vmi(false), { hotplugReady: new Set() })).toEqual([]);
    expect(s.calls).toHaveLength(1);
    expect(s.calls[0]).toMatch(/^update <disk type="block" device="cdrom">/);
    expect(s.calls[0]).not.toContain('<source');
    expect(s.calls[0]).toContain('<target dev="sdb" bus="sata"/>');
  });

  it('leaves a drive whose media is not hotplugged alone', async () => {
    const s = stub(rootDisk + drive('<source file="/var/run/kubevirt-private/config.iso"/>'));
    expect(await s.hp.syncDisks(vmi(false), { hotplugReady: new Set() })).toEqual([]);
    expect(s.calls).toEqual([]);
  });
});
