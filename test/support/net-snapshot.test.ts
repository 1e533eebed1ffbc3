/**
 * The network tests' leftover checks compare the project's own nftables tables, not the
 * whole host's: the one-node cluster's kubelet (or the host) may create `ip filter` and
 * the like while they run, which failed metrics-prometheus.test.ts's afterAll on a fresh
 * machine.
 */
import { describe, expect, it } from 'vitest';
import { NAT_TABLE } from '../../src/controllers/virt-handler/network/masquerade-rules';
import { PASST_TABLE } from '../../src/controllers/virt-handler/network/passt-setup';
import { projectNftTables } from './net-snapshot';

describe('net snapshot', () => {
  it('keeps the tables the project writes and ignores the host’s and the kubelet’s', () => {
    const listed = [
      'table ip filter',
      'table ip nat',
      'table ip mangle',
      'table ip6 filter',
      `table ip ${NAT_TABLE}`,
      `table ip6 ${NAT_TABLE}`,
      `table inet ${PASST_TABLE}`,
      'table inet firewalld',
      '',
    ];
    expect(projectNftTables(listed)).toEqual([
      `table inet ${PASST_TABLE}`,
      `table ip ${NAT_TABLE}`,
      `table ip6 ${NAT_TABLE}`,
    ]);
  });
});
