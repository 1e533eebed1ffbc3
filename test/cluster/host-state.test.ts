/**
 * scripts/cluster/host-state.ts's reading of the firewall (no root): which tables and
 * chains are the kubelet's, from what `nft -j` prints for an iptables-nft ruleset like the
 * one a kubelet with makeIPTablesUtilChains left on a fresh host.
 */
import { describe, expect, it } from 'vitest';
import { firewallLines, KUBELET_SYSCTLS, kubeletFirewall } from '../../scripts/cluster/host-state';

const meta = { metainfo: { version: '1.0.6', json_schema_version: 1 } };
const chain = (family: string, table: string, name: string) => ({
  chain: { family, table, name, handle: 1 },
});
const chains = JSON.stringify({
  nftables: [
    meta,
    chain('ip', 'mangle', 'KUBE-IPTABLES-HINT'),
    chain('ip', 'mangle', 'KUBE-KUBELET-CANARY'),
    chain('ip', 'filter', 'KUBE-FIREWALL'),
    chain('ip', 'filter', 'INPUT'),
    chain('ip6', 'nat', 'KUBE-KUBELET-CANARY'),
    chain('inet', 'host', 'input'),
  ],
});
const tables = JSON.stringify({
  nftables: [
    meta,
    ...[
      ['ip', 'mangle'],
      ['ip', 'filter'],
      ['ip6', 'nat'],
      ['inet', 'host'],
      ['ip', 'empty'],
    ].map(([family, name]) => ({ table: { family, name, handle: 2 } })),
  ],
});

describe('host state', () => {
  it('lists tables and chains, and picks the kubelet’s KUBE- chains and their tables', () => {
    const lines = firewallLines([chains, tables]);
    expect(lines).toEqual([
      'chain inet host input',
      'chain ip filter INPUT',
      'chain ip filter KUBE-FIREWALL',
      'chain ip mangle KUBE-IPTABLES-HINT',
      'chain ip mangle KUBE-KUBELET-CANARY',
      'chain ip6 nat KUBE-KUBELET-CANARY',
      'table inet host',
      'table ip empty',
      'table ip filter',
      'table ip mangle',
      'table ip6 nat',
    ]);
    expect(kubeletFirewall(lines)).toEqual([
      'table ip filter',
      'table ip mangle',
      'table ip6 nat',
      'chain ip filter KUBE-FIREWALL',
      'chain ip mangle KUBE-IPTABLES-HINT',
      'chain ip mangle KUBE-KUBELET-CANARY',
      'chain ip6 nat KUBE-KUBELET-CANARY',
    ]);
    // The host's own tables and chains are never the kubelet's.
    expect(kubeletFirewall(['table inet host', 'chain inet host input'])).toEqual([]);
  });

  it('records the kernel settings the kubelet tunes at start', () => {
    // pkg/kubelet/cm/container_manager_linux.go setupKernelTunables (kubelet v1.34).
    expect([...KUBELET_SYSCTLS]).toEqual([
      'vm/overcommit_memory',
      'vm/panic_on_oom',
      'kernel/panic',
      'kernel/panic_on_oops',
      'kernel/keys/root_maxkeys',
      'kernel/keys/root_maxbytes',
    ]);
  });
});
