/**
 * Network interfaces. Pod-network and multus bindings (masquerade, bridge, binding plugins) become
 * `type="ethernet"` taps the network setup created; SR-IOV interfaces become PCI host
 * devices resolved by the device plugin; passtBinding becomes libvirt's passt backend, or
 * QEMU arguments on a launcher-started passt where libvirt has none (./passt-qemu). Virtio NICs use the non-transitional model;
 * under SEV/SNP they get `iommu="on"` and no option ROM.
 */
import { createHash } from 'node:crypto';
import type { Interface as VMIInterface } from '../../api/generated/types';
import { type Configurator, type Conversion, userAlias } from '../conversion';
import type { HostDev, Interface } from '../domain/types';
import { passtPorts } from '../passt';
import { hostPCISource, parsePCIAddress } from '../pci';
import { addPasstQemuArgs } from './passt-qemu';

const MAC = /^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$/;

/** Tap device name: `tap0` for the pod network, `tap<hash>` for secondary networks (upstream's scheme). */
export function tapName(networkName: string, isPodNetwork: boolean): string {
  if (isPodNetwork) return 'tap0';
  let name = tapNames.get(networkName);
  if (name === undefined) {
    name = `tap${createHash('sha256').update(networkName).digest('hex').slice(0, 11)}`;
    if (tapNames.size > 4096) tapNames.clear();
    tapNames.set(networkName, name);
  }
  return name;
}

// Memo of the hash above (pure, so caching cannot change results); bounded.
const tapNames = new Map<string, string>();

function nicModel(c: Conversion, iface: VMIInterface, path: string): string {
  const model = iface.model || 'virtio';
  if (model === 'virtio') return c.virtioModel();
  if (!['e1000', 'e1000e', 'igb', 'ne2k_pci', 'pcnet', 'rtl8139'].includes(model)) {
    c.fail(`${path}.model`, `'${c.line(model, `${path}.model`)}' is not a supported interface model`);
  }
  return model;
}

function sriovHostDev(c: Conversion, iface: VMIInterface, path: string): HostDev {
  const dev = c.ctx.hostDevices[iface.name];
  if (dev?.type !== 'pci') {
    c.fail(
      path,
      `SR-IOV interface '${iface.name}' has no PCI device resolved in the converter context (hostDevices)`,
    );
  }
  const address = hostPCISource(dev.address);
  if (!address) c.fail(path, `resolved PCI address '${dev.address}' is malformed`);
  const hostdev: HostDev = {
    mode: 'subsystem',
    type: 'pci',
    managed: 'no',
    source: { address },
    alias: { name: `ua-sriov-${iface.name}` },
  };
  if (iface.bootOrder !== undefined) hostdev.boot = { order: iface.bootOrder };
  if (iface.pciAddress) hostdev.address = guestPCI(c, iface.pciAddress, `${path}.pciAddress`);
  return hostdev;
}

function guestPCI(c: Conversion, text: string, path: string) {
  const address = parsePCIAddress(text);
  if (!address) c.fail(path, `'${c.line(text, path)}' is not a PCI address (dddd:bb:ss.f)`);
  return address;
}

/**
 * The passt binding as upstream's passt plugin renders it: libvirt's user interface with
 * the passt backend on the pod's eth0, forwarding the declared ports (TCP and UDP whole
 * when none are declared). QEMU reaches passt over a socket; no tap, no DHCP server of
 * ours (passt answers the guest's DHCP with the pod's own address).
 */
function passtInterface(c: Conversion, iface: VMIInterface, path: string): Interface {
  const { tcp, udp } = passtPorts(iface, path, (p, m) => c.fail(p, m));
  const forwards: NonNullable<Interface['portForward']> =
    tcp.length + udp.length === 0
      ? [
          { proto: 'tcp', dev: 'eth0' },
          { proto: 'udp', dev: 'eth0' },
        ]
      : [
          ...(tcp.length
            ? [{ proto: 'tcp' as const, dev: 'eth0', range: tcp.map((start) => ({ start })) }]
            : []),
          ...(udp.length
            ? [{ proto: 'udp' as const, dev: 'eth0', range: udp.map((start) => ({ start })) }]
            : []),
        ];
  return {
    type: 'user',
    source: { dev: 'eth0' },
    model: { type: nicModel(c, iface, path) },
    backend: { type: 'passt' },
    portForward: forwards,
    alias: userAlias(iface.name),
  };
}

export const interfacesConfigurator: Configurator = {
  name: 'interfaces',
  configure(c: Conversion) {
    const ifaces = c.spec.domain.devices.interfaces ?? [];
    const networks = new Map((c.spec.networks ?? []).map((n) => [n.name, n]));
    ifaces.forEach((iface, i) => {
      const path = `spec.domain.devices.interfaces[${i}]`;
      c.segment(iface.name, `${path}.name`);
      const network = networks.get(iface.name);
      if (!network) c.fail(`${path}.name`, `no network named '${iface.name}' in spec.networks`);
      // `absent` marks an interface being hot-unplugged: it is no longer part of the domain.
      if (iface.state === 'absent') return;
      if (iface.sriov) {
        c.domain.devices.hostdev ??= [];
        c.domain.devices.hostdev.push(sriovHostDev(c, iface, path));
        return;
      }
      if (iface.slirp || iface.macvtap || iface.passt) {
        c.fail(path, 'the slirp, macvtap and passt bindings were removed upstream; use masquerade or bridge');
      }
      if (iface.passtBinding && network.pod === undefined) {
        c.fail(`${path}.passtBinding`, 'the passt binding is only supported on the pod network');
      }
      if (!iface.masquerade && !iface.bridge && !iface.binding && !iface.passtBinding) {
        c.fail(path, 'needs a binding (masquerade, bridge, passtBinding, sriov or binding)');
      }
      if (iface.passtBinding && c.ctx.passtBackend === 'qemu') {
        // This libvirt cannot start passt: the launcher does, QEMU joins its socket.
        passtPorts(iface, path, (p, m) => c.fail(p, m));
        const mac = iface.macAddress ?? c.ctx.interfaceMACs[iface.name];
        if (mac !== undefined && !MAC.test(mac))
          c.fail(`${path}.macAddress`, `'${c.line(mac, `${path}.macAddress`)}' is not a MAC address`);
        if (iface.state !== undefined && !['up', 'down'].includes(iface.state))
          c.fail(`${path}.state`, `'${c.line(iface.state, `${path}.state`)}' is not one of up, down, absent`);
        addPasstQemuArgs(c, iface, path, nicModel(c, iface, path), mac?.replaceAll('-', ':').toLowerCase());
        return;
      }
      const dom: Interface = iface.passtBinding
        ? passtInterface(c, iface, path)
        : {
            type: 'ethernet',
            target: { dev: tapName(network.name, network.pod !== undefined), managed: 'no' },
            model: { type: nicModel(c, iface, path) },
            alias: userAlias(iface.name),
          };
      const mac = iface.macAddress ?? c.ctx.interfaceMACs[iface.name];
      if (mac !== undefined) {
        if (!MAC.test(mac))
          c.fail(`${path}.macAddress`, `'${c.line(mac, `${path}.macAddress`)}' is not a MAC address`);
        dom.mac = { address: mac.replaceAll('-', ':').toLowerCase() };
      }
      if (iface.state === 'down') dom.link = { state: 'down' };
      else if (iface.state !== undefined && iface.state !== 'up') {
        c.fail(`${path}.state`, `'${c.line(iface.state, `${path}.state`)}' is not one of up, down, absent`);
      }
      if (iface.pciAddress) dom.address = guestPCI(c, iface.pciAddress, `${path}.pciAddress`);
      if (iface.acpiIndex !== undefined) dom.acpi = { index: iface.acpiIndex };
      if (dom.model?.type.startsWith('virtio')) {
        // One queue per vCPU with networkInterfaceMultiqueue (upstream caps at 256).
        const queues = c.spec.domain.devices.networkInterfaceMultiqueue ? Math.min(c.vcpus, 256) : undefined;
        if (queues !== undefined && queues > 1) dom.driver = { name: 'vhost', queues };
        if (c.iommu) dom.driver = { ...dom.driver, iommu: 'on' };
      }
      if (iface.bootOrder !== undefined) dom.boot = { order: iface.bootOrder };
      // No option ROM unless the NIC boots (avoids iPXE), and never under SEV/SNP.
      if (iface.bootOrder === undefined || c.iommu) dom.rom = { enabled: 'no' };
      c.domain.devices.interface ??= [];
      c.domain.devices.interface.push(dom);
    });
  },
};
