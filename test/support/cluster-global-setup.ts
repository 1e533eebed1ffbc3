/**
 * Vitest global setup: a broker for the run's one-node cluster, following
 * kube-global-setup.ts. Nothing starts up front; the first test file that calls
 * `sharedCluster()` makes the broker bring the cluster up (scripts/cluster/up.ts), every
 * later caller gets the same one, and the run's end brings it down. `/cluster?nodes=2`
 * adds the second node (scripts/cluster/extra-node.ts) when the cluster has one. A
 * teardown that leaves mounts, the bridge, kubepods cgroups or a second node's namespaces,
 * interfaces or cgroup root behind fails the run.
 */
import { createServer, type Server } from 'node:http';
import { down } from '../../scripts/cluster/down';
import type { ClusterInfo } from '../../scripts/cluster/state';
import { addNodes, up } from '../../scripts/cluster/up';
import { CLUSTER_BROKER_ENV, SECOND_NODE_TAINT, TEST_BRIDGE, TEST_POD_SUBNET, testStateDir } from './cluster';

export default async function setup(): Promise<() => Promise<void>> {
  let cluster: Promise<ClusterInfo> | undefined;
  let twoNodes: Promise<ClusterInfo> | undefined;
  let stateDir: string | undefined;
  const log = (line: string) => process.stderr.write(`[cluster] ${line}\n`);
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://broker');
    const nodes = Number(url.searchParams.get('nodes') ?? '1');
    if (url.pathname !== '/cluster' || !(nodes === 1 || nodes === 2)) {
      res.writeHead(404).end(`unknown request ${req.url}`);
      return;
    }
    if (!cluster) {
      const dir = testStateDir();
      stateDir = dir;
      // Room for a second node's pod addresses, whichever file asks first.
      cluster = up({
        stateDir: dir,
        bridge: TEST_BRIDGE,
        podSubnet: TEST_POD_SUBNET,
        nodes,
        ipamNodes: 2,
        log,
      });
    }
    if (nodes > 1 && !twoNodes) {
      const dir = stateDir as string;
      // Once, after the first node: a failure here fails the two-node files only. Tainted:
      // the one-node files' unpinned pods and DaemonSets stay on node 1.
      twoNodes = cluster.then((info) =>
        info.extraNodes?.length ? info : addNodes(dir, nodes, { log, taints: [SECOND_NODE_TAINT] }),
      );
    }
    (nodes > 1 && twoNodes ? twoNodes : cluster).then(
      (info) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(info)),
      (err: unknown) => res.writeHead(500).end(err instanceof Error ? err.message : String(err)),
    );
  });
  // Bringing a cluster up takes longer than Node's default request timeouts allow for.
  server.requestTimeout = 0;
  server.headersTimeout = 0;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  if (!addr || typeof addr === 'string') throw new Error('cluster broker: no port');
  process.env[CLUSTER_BROKER_ENV] = `http://127.0.0.1:${addr.port}`;

  return async () => {
    server.close();
    if (!cluster || !stateDir) return;
    await cluster.catch(() => undefined);
    await twoNodes?.catch(() => undefined);
    const left = await down({ stateDir, bridge: TEST_BRIDGE, log });
    if (left.length) throw new Error(`the test cluster left behind:\n  ${left.join('\n  ')}`);
  };
}
