import { describe, expect, it } from 'vitest';
import { filesystemsConfigurator, hostDevicesConfigurator } from '../../../src/converter/configurators';
import { run, vmi } from '../support/run';

describe('host devices configurator', () => {
  it('passes through PCI GPUs, vGPUs with display and USB devices resolved by the context', () => {
    const d = run(
      [hostDevicesConfigurator],
      vmi({
        domain: {
          devices: {
            gpus: [
              { name: 'gpu1', deviceName: 'nvidia.com/x' },
              {
                name: 'vgpu',
                deviceName: 'nvidia.com/y',
                virtualGPUOptions: { display: { enabled: true, ramFB: { enabled: false } } },
              },
            ],
            hostDevices: [{ name: 'node-usb-to-vmi-storage', deviceName: 'kubevirt.io/storage' }],
          },
        },
      }),
    );
    expect(d.devices.hostdev).toEqual([
      {
        mode: 'subsystem',
        type: 'pci',
        managed: 'no',
        source: { address: { domain: '0x0000', bus: '0x81', slot: '0x00', function: '0x0' } },
        alias: { name: 'ua-gpu-gpu1' },
      },
      {
        mode: 'subsystem',
        type: 'mdev',
        model: 'vfio-pci',
        managed: 'no',
        display: 'on',
        source: { address: { uuid: 'c2177883-f1bb-47f0-914d-32a22e3a8804' } },
        alias: { name: 'ua-gpu-vgpu' },
      },
      {
        mode: 'subsystem',
        type: 'usb',
        managed: 'no',
        source: { vendor: { id: '0x46f4' }, product: { id: '0x0001' } },
        alias: { name: 'ua-usb-host-node-usb-to-vmi-storage' },
      },
    ]);
  });

  it("names devices with upstream's per-kind alias prefixes (gpu-, dra-gpu-, hostdevice-, usb-host-)", () => {
    // Upstream: gpu.AliasPrefix, dra gpu.AliasPrefix, generic.AliasPrefix and the USB
    // host device's NewUserDefinedAlias("usb-host-" + name).
    const d = run(
      [hostDevicesConfigurator],
      vmi({
        domain: {
          devices: {
            gpus: [{ name: 'gpu1', claimName: 'gpu-claim', requestName: 'gpu' }],
            hostDevices: [
              { name: 'nvme', deviceName: 'x.io/nvme' },
              { name: 'node-usb-to-vmi-storage', deviceName: 'kubevirt.io/storage' },
            ],
          },
        },
      }),
    );
    expect(d.devices.hostdev!.map((h) => h.alias!.name)).toEqual([
      'ua-dra-gpu-gpu1',
      'ua-hostdevice-nvme',
      'ua-usb-host-node-usb-to-vmi-storage',
    ]);
  });

  it('fails naming the device when the host resolved nothing for it', () => {
    expect(() =>
      run(
        [hostDevicesConfigurator],
        vmi({ domain: { devices: { hostDevices: [{ name: 'ghost', deviceName: 'x.io/y' }] } } }),
      ),
    ).toThrow(
      "spec.domain.devices.hostDevices[0]: device 'ghost' (x.io/y) has no host device resolved in the converter context (hostDevices)",
    );
  });
});

describe('filesystems configurator', () => {
  it('serves virtiofs from a socket and shares guest memory', () => {
    const d = run(
      [filesystemsConfigurator],
      vmi({
        volumes: [{ name: 'fs', persistentVolumeClaim: { claimName: 'c' } }],
        domain: { devices: { filesystems: [{ name: 'fs', virtiofs: {} }] } },
      }),
    );
    expect(d.devices.filesystem).toEqual([
      {
        type: 'mount',
        accessmode: 'passthrough',
        driver: { type: 'virtiofs', queue: 1024 },
        source: { socket: '/var/run/kubevirt/virtiofs-containers/fs.sock' },
        target: { dir: 'fs' },
        alias: { name: 'ua-fs' },
      },
    ]);
    expect(d.memoryBacking).toEqual({ source: { type: 'memfd' }, access: { mode: 'shared' } });
    expect(() =>
      run(
        [filesystemsConfigurator],
        vmi({ domain: { devices: { filesystems: [{ name: 'fs', virtiofs: {} }] } } }),
      ),
    ).toThrow("spec.domain.devices.filesystems[0].name: no volume named 'fs' in spec.volumes");
  });
});
