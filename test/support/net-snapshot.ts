/**
 * What a network test may leave behind: the host's links, network namespaces and the
 * project's nftables tables, listed before and after so a test can show nothing was left.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface NetSnapshot {
  links: string[];
  netns: string[];
  /** The host's nftables tables the project could create ({@link projectNftTables}). */
  nftTables: string[];
}

/**
 * The project's own nftables tables among `nft list tables` lines: those its network
 * set-up writes (`kubevirt_nat` of the masquerade binding, `kubevirt_passt`), which
 * belong in a pod's network namespace and must never appear on the host. Others' tables
 * are not a test's business: the one-node cluster's kubelet or the host's own firewall
 * may add or remove theirs while a test runs (the cluster's `down` checks the kubelet's).
 */
export function projectNftTables(lines: string[]): string[] {
  return lines.filter((l) => /^table (ip|ip6|inet|bridge|arp|netdev) kubevirt_/.test(l.trim())).sort();
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
  const nftTables = projectNftTables(
    execFileSync('nft', ['list', 'tables'], { encoding: 'utf8' }).split('\n'),
  );
  return { links, netns, nftTables };
}

/**
 * Whether this process may create network namespaces and run the CNI plugins; when not,
 * says why on stderr (the network tests are then skipped).
 */
export function canTestNetworking(): boolean {
  const why =
    process.getuid?.() !== 0
      ? 'they need root (network namespaces, CNI plugins, nftables)'
      : !existsSync('/usr/lib/cni/bridge') || !existsSync('/usr/lib/cni/host-local')
        ? 'the CNI plugins are missing (/usr/lib/cni: run scripts/setup-network.sh)'
        : undefined;
  if (why) process.stderr.write(`skipping network tests: ${why}\n`);
  return why === undefined;
}

/**
 * A tiny-guest build with networking (recipe 7 or later: udhcpc, echo server,
 * kvts.connect), found by its own directory: the shared `current` link may point at an
 * older recipe another checkout built.
 */
export function networkGuestDir(
  cache = process.env.KUBEVIRT_TS_CACHE || '/var/cache/kubevirt-ts',
  minRecipe = 7,
): string | undefined {
  const root = join(cache, 'guest');
  if (!existsSync(root)) return undefined;
  const dirs = readdirSync(root)
    .map((d) => join(root, d))
    .filter((d) => {
      try {
        return (
          Number(readFileSync(join(d, 'recipe'), 'utf8').trim()) >= minRecipe &&
          existsSync(join(d, 'initrd.img'))
        );
      } catch {
        return false;
      }
    })
    .sort();
  return dirs.at(-1);
}

/**
 * What one test may leave behind, scoped so tests running in parallel do not see each
 * other: which of `netns` exist, the ports of `bridge` (veths of pods on it), whether the
 * bridge exists, and the project's nftables tables on the host (none ever should be).
 */
export function scopedSnapshot(netns: string[], bridge: string) {
  const all = netSnapshot();
  let ports: string[] = [];
  try {
    ports = (
      JSON.parse(
        execFileSync('ip', ['-j', 'link', 'show', 'master', bridge], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
        }),
      ) as {
        ifname: string;
      }[]
    )
      .map((l) => l.ifname)
      .sort();
  } catch {
    // no bridge: no ports
  }
  return {
    netns: all.netns.filter((n) => netns.includes(n)),
    bridge: all.links.includes(bridge),
    bridgePorts: ports,
    nftTables: all.nftTables,
  };
}
