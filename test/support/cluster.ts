/**
 * The real one-node cluster (scripts/cluster) for tests: one per vitest run, brought up on
 * first use by the global setup's broker (test/support/cluster-global-setup.ts) and brought
 * down when the run ends, in its own state directory ($KUBEVIRT_TS_CACHE/cluster-test),
 * bridge and pod subnet, apart from a cluster a user brought up with `npm run cluster -- up`.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ClusterInfo } from '../../scripts/cluster/state';
import { missingPieces } from '../../scripts/cluster/up';
import { cacheDir } from './integration';

/** Set by the global setup: the URL its cluster broker listens on. */
export const CLUSTER_BROKER_ENV = 'KUBEVIRT_TS_CLUSTER_BROKER';

/** The test cluster's bridge and pod subnet (the default cluster uses kvts-br0, 10.244.0.0/24). */
export const TEST_BRIDGE = 'kvts-test0';
export const TEST_POD_SUBNET = '10.245.0.0/24';

/**
 * The test cluster's state directory, in the cache: `down` empties it but keeps
 * containerd's image store, so a warm run imports no image.
 */
export function testStateDir(): string {
  const dir = join(cacheDir, 'cluster-test');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** Why the cluster tests cannot run here, or undefined when they can. */
export function clusterUnavailableReason(): string | undefined {
  // (Another kubelet on the machine is not "missing": `up` refuses it with its pid.)
  const missing = missingPieces();
  return missing.length ? `missing: ${missing.join('; ')}` : undefined;
}

/**
 * The taint on the shared cluster's second node: files that do not ask for two nodes
 * create pods without nodeName (and install DaemonSets), which must stay on node 1. A
 * two-node file pins its pods (nodeName) or tolerates this.
 */
export const SECOND_NODE_TAINT = { key: 'kubevirt-ts.io/test-second-node', effect: 'NoSchedule' } as const;

const shared = new Map<number, Promise<ClusterInfo>>();

/**
 * The run's cluster, brought up on first use by the broker. `nodes: 2` asks for a second
 * node (ClusterInfo.extraNodes[0]): the broker adds it to the run's cluster if it runs
 * with one, so one-node and two-node files share it (the first node allocates pod
 * addresses from the subnet's lower half for that). The second node carries
 * {@link SECOND_NODE_TAINT}.
 */
export function sharedCluster({ nodes = 1 }: { nodes?: number } = {}): Promise<ClusterInfo> {
  let cluster = shared.get(nodes);
  if (!cluster) {
    const broker = process.env[CLUSTER_BROKER_ENV];
    if (!broker)
      throw new Error(
        `${CLUSTER_BROKER_ENV} is unset: add test/support/cluster-global-setup.ts to globalSetup`,
      );
    cluster = fetch(`${broker}/cluster?nodes=${nodes}`).then(async (res) => {
      const text = await res.text();
      if (!res.ok) throw new Error(`shared cluster: ${text}`);
      return JSON.parse(text) as ClusterInfo;
    });
    shared.set(nodes, cluster);
  }
  return cluster;
}
