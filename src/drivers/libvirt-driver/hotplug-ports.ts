/**
 * Spare PCIe root ports for hotplug (upstream's launcher appendPCIeRootPortControllers): on
 * q35 a virtio disk can only be hot-plugged into an empty `pcie-root-port`, and libvirt
 * fills every port it knows at definition. So, as upstream, the domain is defined, read
 * back with its addresses assigned, and defined again with a few more root ports, which
 * stay empty for hotplug (QEMU's q35 signals the plug through ACPI; the guest needs ACPI,
 * which admission's default `features: {}` gives it).
 */
import type { VirtualMachineInstance } from '../../api';
import type { Domain } from '../../converter';

/** Empty root ports a hotplug-capable q35 domain gets (upstream's v1 count for a small VM). */
export const HOTPLUG_ROOT_PORTS = 3;

/** Whether `domain` (of `vmi`) needs spare root ports: q35, hotplug not disabled. */
export function wantsHotplugPorts(vmi: VirtualMachineInstance, domain: Domain): boolean {
  if (vmi.spec.domain.devices.disableHotplug) return false;
  return (domain.os?.type?.machine ?? '').includes('q35');
}

/**
 * libvirt's read-back domain XML with `n` more (index-less) root ports before `</devices>`,
 * each alone in a free slot of the root bus (libvirt would make them more functions of the
 * multifunction slot its own ports share).
 */
export function withHotplugPorts(xml: string, n = HOTPLUG_ROOT_PORTS): string {
  const at = xml.lastIndexOf('</devices>');
  if (at < 0) throw new Error('domain XML without </devices>');
  const used = new Set<number>();
  for (const m of xml.matchAll(/<address type='pci' domain='0x0000' bus='0x00' slot='(0x[0-9a-f]+)'/g))
    used.add(Number(m[1]));
  const ports: string[] = [];
  for (let slot = 2; slot < 0x1f && ports.length < n; slot++) {
    if (used.has(slot)) continue;
    const hex = `0x${slot.toString(16).padStart(2, '0')}`;
    ports.push(
      `<controller type='pci' model='pcie-root-port'><address type='pci' domain='0x0000' bus='0x00' slot='${hex}' function='0x0'/></controller>\n`,
    );
  }
  return xml.slice(0, at) + ports.join('') + xml.slice(at);
}
