/**
 * The node side of the scale benchmark, in one process: the simulated nodes (Node objects
 * and Lease heartbeats), one real virt-handler per node on the fake driver, and the
 * stand-in kubelet running each launcher pod's virt-launcher in-process on that driver.
 * Prints `ready` once all are started; SIGTERM stops them.
 *
 * Nodes first..first+nodes-1 of `total` are this process's (the benchmark splits them over
 * a few processes: each launcher holds ~10 file descriptors).
 *
 *   node --import tsx bench/scale/node-main.ts (--kubeconfig F | --socket P) --first I --nodes C --total M --pods-per-node K --root DIR [--bind]
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { VirtHandler } from '../../src/controllers/virt-handler/handler';
import { FakeDriver, FakeHost } from '../../src/drivers';
import { clientFromArgs, connectOptions, exitWithParent, UNLIMITED } from './connect';
import { StandInKubelet } from './kubelet';
import { nodeCapacity, registerNodes, startLeases } from './sim-nodes';

exitWithParent();
const { values } = parseArgs({
  options: {
    ...connectOptions,
    first: { type: 'string', default: '0' },
    nodes: { type: 'string', default: '10' },
    total: { type: 'string' },
    'pods-per-node': { type: 'string', default: '110' },
    root: { type: 'string' },
    bind: { type: 'boolean', default: false },
  },
});
const first = Number(values.first);
const count = Number(values.nodes);
const total = Number(values.total ?? first + count);
const root = values.root ?? '';
if (!root) throw new Error('--root is required');
const nodeName = (i: number) => `sim-node-${String(i).padStart(4, '0')}`;
const names = Array.from({ length: count }, (_, i) => nodeName(first + i));

// The simulated infrastructure (nodes, leases, kubelet) stands for many processes: one
// generous client. Each handler gets its own client with the default limits, as it would
// in its own pod; on the embedded store (--socket) no client is limited (connect.ts).
const embedded = values.socket !== undefined;
const infra = clientFromArgs(values, embedded ? UNLIMITED : { qps: 1000, burst: 2000 });
await registerNodes(infra, names, nodeCapacity(Number(values['pods-per-node'])));
const leases = await startLeases(infra, names);

const nodes = names.map((name) => {
  const host = new FakeHost();
  const podsRoot = join(root, name, 'pods');
  mkdirSync(join(root, name, 'handler'), { recursive: true });
  const handler = new VirtHandler({
    client: clientFromArgs(values, embedded ? UNLIMITED : {}),
    nodeName: name,
    podsRoot,
    notifySocket: join(root, name, 'handler', 'notify.sock'),
    capabilities: () => new FakeDriver({ host }).probe(),
    // The Node is the simulated kubelet's (sim-nodes.ts), labels included.
    registerNode: false,
    log: (m) => process.stderr.write(`virt-handler ${name}: ${m}\n`),
  });
  return { name, podsRoot, handler, driver: () => new FakeDriver({ host }) };
});
await Promise.all(nodes.map((n) => n.handler.start()));
// With --bind this process also schedules, over every node of the benchmark.
const bindTo = values.bind ? Array.from({ length: total }, (_, i) => nodeName(i)) : [];
const kubelet = new StandInKubelet(infra, nodes, bindTo);
await kubelet.start();
process.stdout.write('ready\n');

process.once('SIGTERM', () => {
  leases.stop();
  void (async () => {
    await kubelet.stop();
    await Promise.all(nodes.map((n) => n.handler.stop()));
    process.stderr.write(`kubelet writes ${JSON.stringify(kubelet.writes)}\n`);
    process.exit(0);
  })();
});
