/**
 * The device plugins a virt-handler registers on a node with a kubelet, as upstream's:
 * `devices.kubevirt.io/kvm` (/dev/kvm), `tun` (/dev/net/tun) and `vhost-net`
 * (/dev/vhost-net), 1000 each (`--max-devices`, from the KubeVirt CR's
 * `virtualMachineInstancesPerNode`), and `sev` (/dev/sev, one per SEV ASID) where the host has
 * SEV. The kubelet then reports them in the Node's capacity and hands the device nodes
 * to launcher pods that request them.
 */
import type { HostCapabilities } from '../../../drivers/driver';
import { SHARED_DEVICE_COUNT } from '../node-labels';
import { DevicePlugin, type DevicePluginOptions_, type SharedDevice } from './device-plugin';

/** The shared devices of a node with these capabilities. */
export function nodeSharedDevices(
  caps: Pick<HostCapabilities, 'sev'>,
  count = SHARED_DEVICE_COUNT,
): SharedDevice[] {
  const out: SharedDevice[] = [
    { resourceName: 'devices.kubevirt.io/kvm', devicePath: '/dev/kvm', count },
    { resourceName: 'devices.kubevirt.io/tun', devicePath: '/dev/net/tun', count },
    {
      resourceName: 'devices.kubevirt.io/vhost-net',
      devicePath: '/dev/vhost-net',
      count,
    },
  ];
  if (caps.sev?.sev && caps.sev.maxGuests > 0) {
    out.push({ resourceName: 'devices.kubevirt.io/sev', devicePath: '/dev/sev', count: caps.sev.maxGuests });
  }
  return out;
}

/** Starts one plugin per device; resolves with them (stop each on shutdown). */
export async function startDevicePlugins(
  devices: SharedDevice[],
  opts: Omit<DevicePluginOptions_, 'device'> = {},
): Promise<DevicePlugin[]> {
  const plugins = devices.map((device) => new DevicePlugin({ ...opts, device }));
  await Promise.all(plugins.map((p) => p.start()));
  return plugins;
}
