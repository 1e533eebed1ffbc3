/** Nameservers and search domains of a resolv.conf (what the DHCP server offers the guest, as upstream). */
import { constants } from 'node:fs';
import { lstat, open, readFile } from 'node:fs/promises';
import { dirname } from 'node:path';

const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;
const DOMAIN = /^[A-Za-z0-9]([A-Za-z0-9-]{0,62})(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}))*\.?$/;

export function parseResolvConf(text: string): { nameservers: string[]; search: string[] } {
  const nameservers: string[] = [];
  const search: string[] = [];
  for (const line of text.split('\n')) {
    const [key, ...rest] = line.trim().split(/\s+/);
    if (key === 'nameserver' && rest[0] && IPV4.test(rest[0])) nameservers.push(rest[0]);
    // Only names DHCP can carry; anything else is left out rather than passed on.
    if (key === 'search') search.splice(0, search.length, ...rest.filter((d) => DOMAIN.test(d)));
  }
  return { nameservers: nameservers.slice(0, 3), search: search.slice(0, 6) };
}

/**
 * Reads and parses `path` (none: no servers). With `noFollow` (a file inside a container's
 * root, `/proc/<pid>/root/...`) neither its directory nor the file may be a symlink: an
 * absolute link there would resolve on the host.
 */
export async function readResolvConf(path = '/etc/resolv.conf', noFollow = false) {
  try {
    if (!noFollow) return parseResolvConf(await readFile(path, 'utf8'));
    if (!(await lstat(dirname(path))).isDirectory()) throw new Error(`${dirname(path)}: not a directory`);
    const fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      return parseResolvConf(await fh.readFile('utf8'));
    } finally {
      await fh.close();
    }
  } catch {
    return { nameservers: [], search: [] };
  }
}
