/**
 * The libvirt driver's disk hotplug against a stub client (the real guest is
 * disk-hotplug-guest.test.ts): which disks it attaches and detaches, on which target
 * name, with libvirt's address left to libvirt; the spare root ports a q35 domain gets.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { convertVMI, type Domain, defaultConverterContext } from '../../../src/converter';
import type { LibvirtClient } from '../../../src/drivers/libvirt';
import { freeTarget, libvirtDiskHotplug } from '../../../src/drivers/libvirt-driver/disk-hotplug';
import { wantsHotplugPorts, withHotplugPorts } from '../../../src/drivers/libvirt-driver/hotplug-ports';

const vmi = (hot: boolean, ready = true): VirtualMachineInstance =>
  ({
    metadata: { name: 'v', namespace: 'ns', uid: 'u' },
    spec: {
      domain: {
        devices: {
          disks: [
            { name: 'root', disk: { bus: 'virtio' } },
            ...(hot ? [{ name: 'data', disk: { bus: 'scsi' }, serial: 'S' }] : []),
          ],
        },
        resources: { requests: { memory: '64Mi' } },
      },
      volumes: [
        { name: 'root', containerDisk: { image: 'x' } },
        ...(hot ? [{ name: 'data', persistentVolumeClaim: { claimName: 'c', hotpluggable: ready } }] : []),
      ],
    },
  }) as VirtualMachineInstance;

const liveXml = (disks: string) =>
  `<domain type="qemu"><name>ns_v</name><os><type>hvm</type></os><devices>${disks}</devices></domain>`;
const rootDisk =
  '<disk type="file" device="disk"><source file="/r/root.qcow2"/><target dev="vda" bus="virtio"/><alias name="ua-root"/></disk>';
const oldScsi =
  '<disk type="file" device="disk"><source file="/x/other"/><target dev="sda" bus="scsi"/><alias name="ua-other"/></disk>';

function stub(initial: string) {
  let xml = initial;
  const calls: string[] = [];
  const client = {
    domainGetXMLDesc: async () => xml,
    domainAttachDevice: async (_d: unknown, dev: string) => {
      calls.push(`attach ${dev}`);
      xml = xml.replace('</devices>', `${dev}</devices>`);
    },
    domainDetachDevice: async (_d: unknown, dev: string) => {
      calls.push(`detach ${dev}`);
      const alias = /<alias name="([^"]+)"/.exec(dev)?.[1];
      xml = xml.replace(new RegExp(`<disk[\\s\\S]*?<alias name="${alias}"/>[\\s\\S]*?</disk>`), '');
    },
  } as unknown as LibvirtClient;
  const hp = libvirtDiskHotplug({
    client: () => client,
    lookupActive: async () => ({ name: 'ns_v', uuid: 'x', id: 1 }),
    call: (_n, _o, fn) => fn(),
    render: async (v, o) => ({
      domain: convertVMI(v, defaultConverterContext({ hotplugReadyVolumes: o.hotplugReady })) as Domain,
    }),
    hotplugDir: () => '/var/run/kubevirt/hotplug-disks',
    pollMs: 1,
  });
  return { hp, calls, xml: () => xml };
}

describe('libvirt disk hotplug', () => {
  it('attaches a ready disk on a free target, without the boot-time address', async () => {
    const s = stub(
      liveXml(rootDisk + oldScsi.replace('/x/other', '/var/run/kubevirt/hotplug-disks/other.img')),
    );
    // "other" is a hotplugged disk no longer in the spec: detached first.
    const now = await s.hp.syncDisks(vmi(true), { hotplugReady: new Set(['data']) });
    expect(now).toEqual(['data']);
    expect(s.calls[0]).toMatch(/^detach [\s\S]*ua-other/);
    expect(s.calls[1]).toMatch(/^attach <disk type="file" device="disk"/);
    expect(s.calls[1]).toContain('<target dev="sda" bus="scsi"/>');
    expect(s.calls[1]).not.toContain('<address');
    expect(s.calls[1]).toContain('<serial>S</serial>');
  });

  it('does not attach a volume that is not ready, nor touch disks outside the hotplug directory', async () => {
    const s = stub(liveXml(rootDisk + oldScsi));
    expect(await s.hp.syncDisks(vmi(true), { hotplugReady: new Set() })).toEqual([]);
    expect(s.calls).toEqual([]);
  });

  it('picks the next free target name of the same bus', () => {
    expect(freeTarget('vdb', new Set(['vda']))).toBe('vdb');
    expect(freeTarget('sda', new Set(['sda', 'sdb']))).toBe('sdc');
    const all = new Set(Array.from({ length: 26 }, (_, i) => `vd${String.fromCharCode(97 + i)}`));
    expect(freeTarget('vda', all)).toBe('vdaa');
  });

  it('gives a q35 domain spare root ports, each alone in a free root-bus slot', () => {
    const back = `<domain><devices><controller type='pci' index='1' model='pcie-root-port'><address type='pci' domain='0x0000' bus='0x00' slot='0x01' function='0x0'/></controller><controller type='pci' index='2' model='pcie-root-port'><address type='pci' domain='0x0000' bus='0x00' slot='0x02' function='0x0'/></controller></devices></domain>`;
    const out = withHotplugPorts(back, 2);
    expect(out.match(/slot='0x03' function='0x0'/g)).toHaveLength(1);
    expect(out.match(/slot='0x04' function='0x0'/g)).toHaveLength(1);
    expect(out.match(/model='pcie-root-port'/g)).toHaveLength(4);
    const v = vmi(false);
    expect(wantsHotplugPorts(v, { os: { type: { machine: 'pc-q35-7.2', value: 'hvm' } } } as Domain)).toBe(
      true,
    );
    v.spec.domain.devices.disableHotplug = true;
    expect(wantsHotplugPorts(v, { os: { type: { machine: 'q35', value: 'hvm' } } } as Domain)).toBe(false);
  });
});
