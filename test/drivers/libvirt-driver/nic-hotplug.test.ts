/**
 * The libvirt driver's NIC hotplug against a stub client (the real guest is the two-node
 * cluster's nic-hotplug-case.ts): a ready interface the domain lacks is attached as the
 * converter renders it (its tap, MAC and alias, no boot-time address); one not ready is
 * not; an absent one is detached and waited for; what the domain has is returned.
 */
import { describe, expect, it } from 'vitest';
import type { Interface, VirtualMachineInstance } from '../../../src/api/generated/types';
import { convertVMI, type Domain, defaultConverterContext } from '../../../src/converter';
import type { LibvirtClient } from '../../../src/drivers/libvirt';
import { libvirtNicHotplug } from '../../../src/drivers/libvirt-driver/nic-hotplug';

const vmi = (blue?: Interface): VirtualMachineInstance =>
  ({
    metadata: { name: 'v', namespace: 'ns', uid: 'u' },
    spec: {
      domain: {
        devices: {
          interfaces: [
            { name: 'default', masquerade: {}, macAddress: '02:00:00:00:00:01' },
            ...(blue ? [blue] : []),
          ],
        },
        resources: { requests: { memory: '64Mi' } },
      },
      networks: [
        { name: 'default', pod: {} },
        ...(blue ? [{ name: 'blue', multus: { networkName: 'blue-net' } }] : []),
      ],
    },
  }) as VirtualMachineInstance;

const defaultNic =
  '<interface type="ethernet"><mac address="02:00:00:00:00:01"/><target dev="tap0" managed="no"/><model type="virtio-non-transitional"/><alias name="ua-default"/><address type="pci" domain="0x0000" bus="0x01" slot="0x00" function="0x0"/></interface>';
const liveXml = (nics: string) =>
  `<domain type="qemu"><name>ns_v</name><os><type>hvm</type></os><devices>${nics}</devices></domain>`;

function stub(initial: string, releaseAfter = 0) {
  let xml = initial;
  const calls: string[] = [];
  let reads = 0;
  let pending: string | undefined;
  const client = {
    domainGetXMLDesc: async () => {
      // The guest lets go of a detached NIC after a few looks (PCIe's attention button).
      if (pending && ++reads > releaseAfter) {
        xml = xml.replace(
          new RegExp(`<interface(?:(?!</interface>)[^])*<alias name="${pending}"/>[^]*?</interface>`),
          '',
        );
        pending = undefined;
      }
      return xml;
    },
    domainAttachDevice: async (_d: unknown, dev: string) => {
      calls.push(`attach ${dev}`);
      xml = xml.replace('</devices>', `${dev}</devices>`);
    },
    domainDetachDevice: async (_d: unknown, dev: string) => {
      calls.push(`detach ${dev}`);
      pending = /<alias name="([^"]+)"/.exec(dev)?.[1];
      reads = 0;
    },
  } as unknown as LibvirtClient;
  const nics = libvirtNicHotplug({
    client: () => client,
    lookupActive: async () => ({ name: 'ns_v', uuid: 'x', id: 1 }),
    call: (_n, _o, fn) => fn(),
    render: async (v) => ({ domain: convertVMI(v, defaultConverterContext()) as Domain }),
    pollMs: 1,
  });
  return { nics, calls };
}

describe('libvirt NIC hotplug', () => {
  it('attaches a ready NIC as rendered, without an address, and not one whose pod side is missing', async () => {
    const s = stub(liveXml(defaultNic));
    const blue = { name: 'blue', bridge: {}, macAddress: '02:00:00:00:00:02' };
    expect(await s.nics.syncInterfaces(vmi(blue), new Set(['default']), {})).toEqual(['default']);
    expect(s.calls).toEqual([]);
    expect(await s.nics.syncInterfaces(vmi(blue), new Set(['default', 'blue']), {})).toEqual([
      'default',
      'blue',
    ]);
    expect(s.calls).toHaveLength(1);
    expect(s.calls[0]).toMatch(/^attach <interface type="ethernet">/);
    expect(s.calls[0]).toContain('<mac address="02:00:00:00:00:02"/>');
    expect(s.calls[0]).toContain('<target dev="tap16477688c0e" managed="no"/>');
    expect(s.calls[0]).toContain('<alias name="ua-blue"/>');
    expect(s.calls[0]).not.toContain('<address');
    // Already there: nothing more.
    await s.nics.syncInterfaces(vmi(blue), new Set(['default', 'blue']), {});
    expect(s.calls).toHaveLength(1);
  });

  it('detaches an absent NIC and waits until the guest released it', async () => {
    const blueNic =
      '<interface type="ethernet"><mac address="02:00:00:00:00:02"/><target dev="tap16477688c0e" managed="no"/><model type="virtio-non-transitional"/><alias name="ua-blue"/></interface>';
    const s = stub(liveXml(defaultNic + blueNic), 3);
    const absent = { name: 'blue', bridge: {}, state: 'absent' };
    expect(await s.nics.syncInterfaces(vmi(absent), new Set(['default', 'blue']), {})).toEqual(['default']);
    expect(s.calls).toHaveLength(1);
    expect(s.calls[0]).toMatch(/^detach <interface[\s\S]*ua-blue/);
    const slow = stub(liveXml(defaultNic + blueNic), 1_000_000);
    await expect(slow.nics.syncInterfaces(vmi(absent), new Set(), {}, 20)).rejects.toThrow(
      'domain ns_v: the guest did not release interface blue within 20 ms',
    );
  });
});
