/**
 * What `up --nodes 2` writes and derives for the second node, without root: the one
 * KubeletConfiguration builder with the node's cgroup root, each node's share of the pod
 * subnet in its CNI config, the node network's addresses and the host interface names,
 * and the checks on what two nodes cannot use.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { writeKubeletConfig } from '../../scripts/cluster/kubelet';
import { writeCniConfig } from '../../scripts/cluster/network';
import { holderName, PER_NODE_PATHS } from '../../scripts/cluster/node-namespace';
import {
  nodeAddress2,
  nodeLinks,
  nodeSubnet,
  podBridgeAddress2,
  podRange,
} from '../../scripts/cluster/node-network';
import { clusterPaths } from '../../scripts/cluster/state';
import { up } from '../../scripts/cluster/up';

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'kvts-two-node-config-'));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('two-node cluster configuration', () => {
  it('kubelet: node 2 gets the same configuration plus its cgroup root', () => {
    const first = JSON.parse(
      readFileSync(writeKubeletConfig(clusterPaths(tmp()), '/ca.crt', '192.0.2.2'), 'utf8'),
    );
    const paths2 = clusterPaths(tmp());
    const second = JSON.parse(
      readFileSync(
        writeKubeletConfig(paths2, '/ca.crt', '10.245.128.2', { cgroupRoot: '/kvts-test0-node2' }),
        'utf8',
      ),
    );
    expect(first.cgroupRoot).toBeUndefined();
    expect(second.cgroupRoot).toBe('/kvts-test0-node2');
    expect(second.address).toBe('10.245.128.2');
    expect(second.containerRuntimeEndpoint).toBe(`unix://${paths2.containerd}/containerd.sock`);
    expect(second.podLogsDir).toBe(join(paths2.kubelet, 'pod-logs'));
    // Everything else is the one builder's: a firewall or cgroup fix there applies to both.
    const rest = (c: Record<string, unknown>) => {
      const { cgroupRoot, address, containerRuntimeEndpoint, podLogsDir, ...others } = c;
      return others;
    };
    expect(rest(second)).toEqual(rest(first));
  });

  it('CNI: each node allocates from its own share of the one /24', () => {
    const dir = tmp();
    const conf = JSON.parse(
      readFileSync(
        writeCniConfig(dir, 'kvts-test0', '10.245.0.0/24', podRange('10.245.0.0/24', 2, 2)),
        'utf8',
      ),
    );
    expect(conf.plugins[0].ipam).toEqual({
      type: 'host-local',
      ranges: [[{ subnet: '10.245.0.0/24', rangeStart: '10.245.0.128', rangeEnd: '10.245.0.253' }]],
      dataDir: join(dir, 'ipam'),
    });
    expect(conf.plugins[0]).toMatchObject({ bridge: 'kvts-test0', isGateway: false, ipMasq: false });
    expect(podRange('10.245.0.0/24', 1, 2)).toEqual({ start: '10.245.0.2', end: '10.245.0.127' });
    // One node: the whole subnet, as before.
    expect(podRange('10.245.0.0/24', 1, 1)).toBeUndefined();
    expect(() => podRange('10.245.0.0/24', 1, 3)).toThrow('nodes: expected 1..2 (node 1 of 3)');
  });

  it('node network: its own /24, host-side interface names from the bridge, per-node paths', () => {
    expect(nodeSubnet('10.245.0.0/24')).toBe('10.245.128.0/24');
    expect(nodeSubnet('10.244.200.0/24')).toBe('10.244.72.0/24');
    expect(nodeAddress2('10.245.0.0/24')).toBe('10.245.128.2');
    expect(podBridgeAddress2('10.245.0.0/24')).toBe('10.245.0.254/24');
    expect(nodeLinks('kvts-test0')).toEqual({
      nodeBridge: 'kvts-test0-nb',
      nodeVeth: 'kvts-test0-n2',
      podVeth: 'kvts-test0-p2',
    });
    expect(() => nodeLinks('kvts-bridge-xy')).toThrow(
      'bridge name "kvts-bridge-xy": at most 12 characters with --nodes 2',
    );
    expect(PER_NODE_PATHS).toEqual([
      '/var/lib/kubelet/device-plugins',
      '/var/log/containers',
      '/var/lib/cni',
      '/run/kubevirt',
    ]);
    expect(holderName('/s/nodes/vm-2')).toBe('kvts-node-holder:/s/nodes/vm-2');
  });

  it('up refuses node counts and bridge names two nodes cannot use, before starting anything', async () => {
    const stateDir = tmp();
    await expect(up({ stateDir, nodes: 3 })).rejects.toThrow('nodes: expected 1..2 (node 1 of 3)');
    await expect(up({ stateDir, nodes: 2, bridge: 'kvts-bridge-xy' })).rejects.toThrow(
      'at most 12 characters',
    );
  });
});
