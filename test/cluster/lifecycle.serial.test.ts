/**
 * `up` then `down` of the one-node cluster, asserting what each leaves on the host: up
 * gives a Ready node, a running pod with an emptyDir (so there are volume mounts, a pod
 * network namespace and kubepods cgroups to clean); down leaves no mount under the state
 * directory, no bridge, no kubepods cgroup and no daemon, and the host's firewall and the
 * kernel settings the kubelet tunes as they were before up. Serial: one kubelet per machine,
 * so it runs after the parallel run's shared cluster is gone.
 */
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { CONTAINERD_BIN } from '../../scripts/cluster/containerd';
import { coreDnsBin } from '../../scripts/cluster/dns';
import { down } from '../../scripts/cluster/down';
import { kubepodsCgroups, leftovers, mountsUnder } from '../../scripts/cluster/host-cleanup';
import { hostState } from '../../scripts/cluster/host-state';
import { kubeletBin } from '../../scripts/cluster/kubelet';
import { linkExists } from '../../scripts/cluster/network';
import { clusterPaths, daemonPid, readInfo } from '../../scripts/cluster/state';
import { up } from '../../scripts/cluster/up';
import { clusterUnavailableReason, TEST_BRIDGE, TEST_POD_SUBNET, testStateDir } from '../support/cluster';
import { integration } from '../support/integration';
import { waitFor } from '../support/wait';

const why = clusterUnavailableReason();
const enabled = integration('one-node cluster', why === undefined, why ?? '');

describe.skipIf(!enabled)('one-node cluster up and down', () => {
  it('comes up with a Ready node and goes down leaving nothing behind', async () => {
    const stateDir = testStateDir();
    const paths = clusterPaths(stateDir);
    // The whole firewall (every nftables table and chain) and the kernel settings the
    // kubelet tunes: down must leave them as up found them.
    const hostBefore = hostState();
    const info = await up({ stateDir, bridge: TEST_BRIDGE, podSubnet: TEST_POD_SUBNET });
    try {
      expect(readInfo(stateDir)).toEqual(info);
      expect(info.server).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      expect(daemonPid(paths, 'containerd', CONTAINERD_BIN)).toBeGreaterThan(1);
      expect(daemonPid(paths, 'kubelet', kubeletBin())).toBeGreaterThan(1);
      expect(daemonPid(paths, 'coredns', coreDnsBin())).toBeGreaterThan(1);
      expect(linkExists(TEST_BRIDGE)).toBe(true);

      const kc = new KubeConfig();
      kc.loadFromFile(info.kubeconfigPath);
      const core = kc.makeApiClient(CoreV1Api);
      const node = await core.readNode({ name: info.nodeName });
      expect(node.status?.addresses).toContainEqual({ type: 'InternalIP', address: info.nodeIP });
      expect(node.status?.nodeInfo?.containerRuntimeVersion).toMatch(/^containerd:\/\/1\.6\./);

      await waitFor(
        'default service account',
        () => core.readNamespacedServiceAccount({ name: 'default', namespace: 'default' }),
        60_000,
        200,
      );
      await core.createNamespacedPod({
        namespace: 'default',
        body: {
          metadata: { name: 'sleeper' },
          spec: {
            volumes: [{ name: 'scratch', emptyDir: {} }],
            containers: [
              {
                name: 'sleep',
                image: info.images['virt-launcher'],
                imagePullPolicy: 'Never',
                command: ['sleep', 'infinity'],
                volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
              },
            ],
          },
        },
      });
      await waitFor(
        'pod sleeper Running',
        async () =>
          (await core.readNamespacedPod({ name: 'sleeper', namespace: 'default' })).status?.phase ===
          'Running',
        120_000,
        250,
      );
      // What down must clean: the pod's mounts (its rootfs, the kubelet's rshared root,
      // the netns), the bridge, the kubepods cgroups.
      expect(mountsUnder(stateDir).length).toBeGreaterThan(2);
      expect(kubepodsCgroups().length).toBeGreaterThan(0);
    } finally {
      const left = await down({ stateDir, bridge: TEST_BRIDGE });
      expect(left).toEqual([]);
    }
    expect(leftovers(stateDir, TEST_BRIDGE)).toEqual([]);
    expect(hostState()).toEqual(hostBefore);
    expect(mountsUnder(stateDir)).toEqual([]);
    expect(linkExists(TEST_BRIDGE)).toBe(false);
    expect(kubepodsCgroups()).toEqual([]);
    expect(daemonPid(paths, 'containerd', CONTAINERD_BIN)).toBeUndefined();
    expect(daemonPid(paths, 'kubelet', kubeletBin())).toBeUndefined();
    expect(daemonPid(paths, 'coredns', coreDnsBin())).toBeUndefined();
    expect(readInfo(stateDir)).toBeUndefined();
  }, 300_000);
});
