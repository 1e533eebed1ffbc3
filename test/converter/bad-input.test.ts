/**
 * Bad input: user strings with markup characters, line breaks or control characters
 * either survive the XML byte-exact (escaped) or are rejected with the VMI field path.
 * The injection test decodes the produced XML with an independent parser and checks that
 * no element appeared that the converter did not put there.
 */
import { XMLParser } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import { ConversionError, convertVMIToXML, decodeDomain } from '../../src/converter';
import { testContext } from './support/contexts';
import { admit } from './support/examples';

const PAYLOAD = `x"/></entry><disk type='block' device='disk'><source dev='/dev/sda'/><target dev='vdz'/></disk><entry name="a`;

function base(): VirtualMachineInstance {
  return {
    metadata: { name: 'victim', namespace: 'default' },
    spec: {
      domain: {
        memory: { guest: '256Mi' },
        devices: { disks: [{ name: 'root', disk: { bus: 'virtio' } }] },
      },
      volumes: [{ name: 'root', containerDisk: { image: 'x' } }],
    },
  };
}

function convert(mut: (v: VirtualMachineInstance) => void): string {
  const v = base();
  mut(v);
  return convertVMIToXML(admit(v), testContext());
}

function rejection(mut: (v: VirtualMachineInstance) => void): string {
  try {
    convert(mut);
  } catch (e) {
    if (e instanceof ConversionError) return e.field.path;
    throw e;
  }
  throw new Error('conversion unexpectedly succeeded');
}

/** Counts elements by tag in a document, with a parser independent of the codec's settings. */
function countTags(xml: string, tag: string): number {
  const doc = new XMLParser({ preserveOrder: true, ignoreAttributes: false }).parse(xml);
  let n = 0;
  const walk = (nodes: unknown[]) => {
    for (const node of nodes as Record<string, unknown>[]) {
      for (const [k, v] of Object.entries(node)) {
        if (k === tag) n++;
        if (Array.isArray(v)) walk(v);
      }
    }
  };
  walk(doc);
  return n;
}

describe('XML injection', () => {
  it('escapes markup in SMBIOS serial, chassis values and kernel arguments, which round-trip exactly', () => {
    const xml = convert((v) => {
      v.spec.domain.firmware = {
        serial: PAYLOAD,
        kernelBoot: { kernelArgs: PAYLOAD, container: { image: 'k', kernelPath: '/vmlinuz' } },
      };
      v.spec.domain.chassis = { manufacturer: PAYLOAD, asset: `<>&'"` };
    });
    expect(countTags(xml, 'disk')).toBe(1);
    // The disk's source, its backing store's and the serial console's.
    expect(countTags(xml, 'source')).toBe(3);
    const d = decodeDomain(xml);
    expect(d.devices.disk).toHaveLength(1);
    expect(d.os.cmdline).toBe(PAYLOAD);
    expect(d.sysinfo?.system?.entry?.find((e) => e.name === 'serial')?.value).toBe(PAYLOAD);
    expect(d.sysinfo?.chassis?.entry).toEqual([
      { name: 'manufacturer', value: PAYLOAD },
      { name: 'asset', value: `<>&'"` },
    ]);
  });

  it('escapes markup in a hostDisk path', () => {
    const path = `/var/data/a"b'<c>&d.img`;
    const xml = convert((v) => {
      v.spec.volumes = [{ name: 'root', hostDisk: { path, type: 'Disk' } }];
    });
    expect(decodeDomain(xml).devices.disk![0].source).toEqual({ file: path });
    expect(countTags(xml, 'disk')).toBe(1);
  });
});

describe('rejected input', () => {
  it.each([
    [
      'spec.volumes[0].name',
      (v: VirtualMachineInstance) => {
        v.spec.volumes![0].name = 'vol"x';
        v.spec.domain.devices.disks![0].name = 'vol"x';
      },
    ],
    [
      'metadata.name',
      (v: VirtualMachineInstance) => {
        v.metadata!.name = 'a<b>';
      },
    ],
    [
      'metadata.namespace',
      (v: VirtualMachineInstance) => {
        v.metadata!.namespace = "ns'x";
      },
    ],
    [
      'spec.domain.devices.disks[0].name',
      (v: VirtualMachineInstance) => {
        v.spec.domain.devices.disks![0].name = 'root/../x';
      },
    ],
    [
      'spec.domain.devices.disks[0].serial',
      (v: VirtualMachineInstance) => {
        v.spec.domain.devices.disks![0].serial = 'SER\nIAL';
      },
    ],
    [
      'spec.domain.devices.disks[0].serial',
      (v: VirtualMachineInstance) => {
        v.spec.domain.devices.disks![0].serial = `<serial>&"'`;
      },
    ],
    [
      'spec.domain.firmware.serial',
      (v: VirtualMachineInstance) => {
        v.spec.domain.firmware = { serial: 'a\u0000b' };
      },
    ],
    [
      'spec.domain.firmware.kernelBoot.kernelArgs',
      (v: VirtualMachineInstance) => {
        v.spec.domain.firmware = {
          kernelBoot: {
            kernelArgs: 'quiet\r\ninit=/bin/sh',
            container: { image: 'k', kernelPath: '/vmlinuz' },
          },
        };
      },
    ],
    [
      'spec.domain.chassis.manufacturer',
      (v: VirtualMachineInstance) => {
        v.spec.domain.chassis = { manufacturer: 'ok\u001bbad' };
      },
    ],
    [
      'spec.volumes[0].hostDisk.path',
      (v: VirtualMachineInstance) => {
        v.spec.volumes = [{ name: 'root', hostDisk: { path: '/data/x.img\n', type: 'Disk' } }];
      },
    ],
    [
      'spec.domain.cpu.model',
      (v: VirtualMachineInstance) => {
        v.spec.domain.cpu = { model: 'Skylake"/><feature' };
      },
    ],
    [
      'spec.domain.machine.type',
      (v: VirtualMachineInstance) => {
        v.spec.domain.machine = { type: 'q35<' };
      },
    ],
  ])('rejects a bad %s with its field path', (path, mut) => {
    expect(rejection(mut)).toBe(path);
  });

  it('names the object in the message', () => {
    expect(() =>
      convert((v) => {
        v.spec.domain.devices.disks![0].serial = 'a\nb';
      }),
    ).toThrow(
      'VirtualMachineInstance/victim: spec.domain.devices.disks[0].serial: must be a single line (no line breaks)',
    );
  });
});
