/**
 * What a network test may leave behind: the host's links, network namespaces and
 * nftables tables, listed before and after so a test can show nothing was left.
 */
import { execFileSync } from 'node:child_process';

export interface NetSnapshot {
  links: string[];
  netns: string[];
  nftTables: string[];
}

export function netSnapshot(): NetSnapshot {
  const links = (
    JSON.parse(execFileSync('ip', ['-j', 'link', 'show'], { encoding: 'utf8' })) as { ifname: string }[]
  )
    .map((l) => l.ifname)
    .sort();
  const netns = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .split('\n')
    .map((l) => l.split(' ')[0])
    .filter(Boolean)
    .sort();
  const nftTables = execFileSync('nft', ['list', 'tables'], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .sort();
  return { links, netns, nftTables };
}

/** Whether this process may create network namespaces and run the CNI plugins. */
export function canTestNetworking(): boolean {
  try {
    return process.getuid?.() === 0 && execFileSync('ls', ['/usr/lib/cni/bridge']).length > 0;
  } catch {
    return false;
  }
}
