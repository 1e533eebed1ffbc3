/** Reading links and routes of a pod's network namespace with iproute2's JSON output. */
import { runInNetns } from '../../common/run-tool';

/** One link as `ip -j addr show` reports it (the fields the setup uses). */
export interface LinkInfo {
  ifname: string;
  mtu: number;
  address?: string;
  addr_info?: { family: string; local: string; prefixlen: number; scope?: string }[];
}

/** The link `name` in `netns`, or undefined when there is none. */
export async function link(netns: string, name: string): Promise<LinkInfo | undefined> {
  try {
    const out = await runInNetns(netns, 'ip', ['-j', 'addr', 'show', 'dev', name]);
    return (JSON.parse(out) as LinkInfo[])[0];
  } catch {
    return undefined;
  }
}

/** The IPv4 routes through `dev` (destination `default` or a prefix, optional gateway). */
export async function routesVia(netns: string, dev: string): Promise<{ dst: string; gateway?: string }[]> {
  const out = await runInNetns(netns, 'ip', ['-4', '-j', 'route', 'show', 'dev', dev]);
  return JSON.parse(out || '[]') as { dst: string; gateway?: string }[];
}
