/**
 * GPUs and host devices: each VMI device is matched by name to the host device the device
 * plugin or DRA driver allocated (converter context), and becomes a `<hostdev>`: PCI
 * passthrough, a mediated device (vGPU, with display and ramfb when asked) or USB.
 * Aliases carry upstream's per-kind prefixes (`ua-gpu-`, `ua-dra-gpu-`, `ua-hostdevice-`,
 * `ua-usb-host-`: the AliasPrefix constants of upstream's device/hostdevice packages), so
 * tools that find a device by its alias see the names upstream's launcher writes.
 */
import type { GPU, HostDevice } from '../../api/generated/types';
import type { Configurator, Conversion } from '../conversion';
import type { HostDev } from '../domain/types';
import { hostPCISource } from '../pci';

const HEX4 = /^[0-9a-fA-F]{4}$/;

/** Upstream's alias prefix for a host device of this kind. */
function hostDevAliasPrefix(resolved: { type: string }, isGPU: boolean, dra: boolean): string {
  if (resolved.type === 'usb') return 'usb-host-';
  if (isGPU) return dra ? 'dra-gpu-' : 'gpu-';
  return 'hostdevice-';
}

function toHostDev(c: Conversion, dev: GPU | HostDevice, path: string, isGPU: boolean): HostDev {
  c.segment(dev.name, `${path}.name`);
  const resolved = c.ctx.hostDevices[dev.name];
  if (!resolved) {
    c.fail(
      path,
      `device '${dev.name}' (${dev.deviceName ?? dev.claimName ?? 'no resource'}) has no host device resolved in the converter context (hostDevices)`,
    );
  }
  const alias = { name: `ua-${hostDevAliasPrefix(resolved, isGPU, dev.claimName !== undefined)}${dev.name}` };
  switch (resolved.type) {
    case 'pci': {
      const address = hostPCISource(resolved.address);
      if (!address) c.fail(path, `resolved PCI address '${resolved.address}' is malformed`);
      return { mode: 'subsystem', type: 'pci', managed: 'no', source: { address }, alias };
    }
    case 'mdev': {
      if (!/^[0-9a-f-]{36}$/i.test(resolved.uuid))
        c.fail(path, `resolved mediated device UUID '${resolved.uuid}' is malformed`);
      const display = isGPU ? (dev as GPU).virtualGPUOptions?.display : undefined;
      const on = display?.enabled !== false && display !== undefined;
      return {
        mode: 'subsystem',
        type: 'mdev',
        model: 'vfio-pci',
        managed: 'no',
        display: on ? 'on' : undefined,
        ramfb: on && display?.ramFB?.enabled !== false ? 'on' : undefined,
        source: { address: { uuid: resolved.uuid.toLowerCase() } },
        alias,
      };
    }
    case 'usb': {
      if (!HEX4.test(resolved.vendor) || !HEX4.test(resolved.product))
        c.fail(path, 'resolved USB vendor/product ids must be 4 hex digits');
      return {
        mode: 'subsystem',
        type: 'usb',
        managed: 'no',
        source: {
          vendor: { id: `0x${resolved.vendor.toLowerCase()}` },
          product: { id: `0x${resolved.product.toLowerCase()}` },
        },
        alias,
      };
    }
  }
}

export const hostDevicesConfigurator: Configurator = {
  name: 'hostDevices',
  configure(c: Conversion) {
    const devices = c.spec.domain.devices;
    const out: HostDev[] = [
      ...(devices.gpus ?? []).map((g, i) => toHostDev(c, g, `spec.domain.devices.gpus[${i}]`, true)),
      ...(devices.hostDevices ?? []).map((h, i) =>
        toHostDev(c, h, `spec.domain.devices.hostDevices[${i}]`, false),
      ),
    ];
    if (out.length === 0) return;
    c.domain.devices.hostdev = [...(c.domain.devices.hostdev ?? []), ...out];
  },
};
