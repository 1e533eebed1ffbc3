/** PCI addresses as KubeVirt writes them (`0000:81:00.1`) and as libvirt wants them. */
import type { Address } from './domain/types';

const PCI = /^([0-9a-fA-F]{4}):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$/;

/** Parses `dddd:bb:ss.f` into a libvirt PCI `<address>`; undefined when malformed. */
export function parsePCIAddress(text: string): Address | undefined {
  const m = PCI.exec(text);
  if (!m) return undefined;
  return {
    type: 'pci',
    domain: `0x${m[1].toLowerCase()}`,
    bus: `0x${m[2].toLowerCase()}`,
    slot: `0x${m[3].toLowerCase()}`,
    function: `0x${m[4]}`,
  };
}

/** The host-side source address of a PCI `<hostdev>`: libvirt's schema wants it without `type`. */
export function hostPCISource(text: string): Address | undefined {
  const a = parsePCIAddress(text);
  if (!a) return undefined;
  const { type: _type, ...rest } = a;
  return rest;
}
