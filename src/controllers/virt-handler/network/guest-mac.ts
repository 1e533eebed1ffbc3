/**
 * The guest MAC of an interface: the spec's (normalised to lower-case colons), else one
 * derived from the VMI's uid and the interface name, so it stays the same across launcher
 * restarts and the DHCP server and the domain agree on it. Derived MACs are locally
 * administered unicast (`x2:` first octet) and never the masquerade bridge's reserved MAC.
 */
import { createHash } from 'node:crypto';

const MAC = /^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$/;

export function guestMAC(
  specMAC: string | undefined,
  vmiUid: string,
  ifaceName: string,
  path: string,
): string {
  if (specMAC !== undefined) {
    if (!MAC.test(specMAC))
      throw new Error(`${path}.macAddress: ${JSON.stringify(specMAC)} is not a MAC address`);
    return specMAC.replaceAll('-', ':').toLowerCase();
  }
  const h = createHash('sha256').update(`${vmiUid}/${ifaceName}`).digest();
  const bytes = [0x02 | (h[0] & 0xfc), h[1], h[2], h[3], h[4], h[5]];
  if (bytes.every((b, i) => (i === 0 ? b === 2 : b === 0))) bytes[5] = 1;
  return bytes.map((b) => b.toString(16).padStart(2, '0')).join(':');
}
