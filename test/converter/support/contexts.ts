/** Test support: converter contexts with the host devices and pinned CPUs the fixtures need. */
import { type ConverterContext, defaultConverterContext } from '../../../src/converter';

/** An x86_64 KVM host whose device plugins resolved every device name used in the fixtures, upstream's examples and the goldens. */
export function testContext(overrides: Partial<ConverterContext> = {}): ConverterContext {
  return defaultConverterContext({
    hostDevices: {
      gpu1: { type: 'pci', address: '0000:81:00.0' },
      'example-gpu': { type: 'pci', address: '0000:82:00.0' },
      vgpu: { type: 'mdev', uuid: 'c2177883-f1bb-47f0-914d-32a22e3a8804' },
      'node-usb-to-vmi-storage': { type: 'usb', vendor: '46f4', product: '0001' },
      nvme: { type: 'pci', address: '0000:05:00.0' },
      'sriov-net': { type: 'pci', address: '0000:3b:02.1' },
      'sriov-b': { type: 'pci', address: '0000:3b:02.2' },
      // The fixture manifests' devices (test/fixtures/manifests).
      'dra-gpu': { type: 'pci', address: '0000:83:00.0' },
      'usb-storage': { type: 'usb', vendor: '0781', product: '5567' },
    },
    // The fixtures' SCSI LUN sits on a block PVC.
    blockVolumes: new Set(['scsi-lun']),
    cpuSet: [2, 3, 4, 5, 6, 7, 8, 9, 10],
    cpuNUMANodes: { 2: 0, 3: 0, 4: 1, 5: 1, 6: 1 },
    sev: { cbitpos: 51, reducedPhysBits: 1, es: true, snp: true },
    vsockCID: 3,
    ...overrides,
  });
}
