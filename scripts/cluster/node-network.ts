/**
 * The second node's networks, inside this machine only. Node network: a host bridge
 * (`<bridge>-nb`, the node subnet's .1) with the node's veth (`<bridge>-n2` on the host,
 * `eth0` in the node) and, in the node, one /32 route to the first node's address; nothing
 * is forwarded (ip_forward stays 0): the host talks to the node and back. Pod network: one
 * flat L2 segment, the node's own pod bridge joined to the first node's by a veth
 * (`<bridge>-p2`), each node allocating from its own share of the one /24; no routing and
 * no default route, as on one node.
 */
import { bridgeAddress, createBridge, deleteBridge, linkExists } from './network';
import { inNode } from './node-namespace';
import { run } from './state';

/** How many nodes the harness can run on one machine (more were never tried). */
export const MAX_NODES = 2;

/** The host-side interfaces of node `index` (2): its node bridge, node veth and pod-segment veth. */
export function nodeLinks(bridge: string): { nodeBridge: string; nodeVeth: string; podVeth: string } {
  if (bridge.length > 12)
    throw new Error(`bridge name ${JSON.stringify(bridge)}: at most 12 characters with --nodes 2`);
  return { nodeBridge: `${bridge}-nb`, nodeVeth: `${bridge}-n2`, podVeth: `${bridge}-p2` };
}

/** The node network's /24: the pod subnet's with the third octet's top bit flipped (10.245.0.0 -> 10.245.128.0). */
export function nodeSubnet(podSubnet: string): string {
  bridgeAddress(podSubnet);
  const [a, b, c] = podSubnet.split('.').map(Number);
  return `${a}.${b}.${c ^ 128}.0/24`;
}

const prefix24 = (subnet: string) => subnet.split('.').slice(0, 3).join('.');

/** Node `index`'s (1-based) share of the pod subnet when `nodes` share it; undefined for one node. */
export function podRange(
  podSubnet: string,
  index: number,
  nodes: number,
): { start: string; end: string } | undefined {
  bridgeAddress(podSubnet);
  if (nodes < 1 || nodes > MAX_NODES || index < 1 || index > nodes)
    throw new Error(`nodes: expected 1..${MAX_NODES} (node ${index} of ${nodes})`);
  if (nodes === 1) return undefined;
  const p = prefix24(podSubnet);
  // .1 is the first node's bridge, .254 the second's.
  return index === 1 ? { start: `${p}.2`, end: `${p}.127` } : { start: `${p}.128`, end: `${p}.253` };
}

/**
 * How many pod addresses node `index` of `nodes` hands out: its {@link podRange}, or the
 * whole /24 but the network, broadcast and bridge (.1) addresses with one node.
 */
export function podAddressCount(podSubnet: string, index: number, nodes: number): number {
  const range = podRange(podSubnet, index, nodes);
  if (!range) return 253;
  const last = (ip: string) => Number(ip.split('.')[3]);
  return last(range.end) - last(range.start) + 1;
}

/** The second node's pod bridge address (in its namespace): the subnet's .254. */
export const podBridgeAddress2 = (podSubnet: string): string => `${prefix24(podSubnet)}.254/24`;

/** The second node's address on the node network: the node subnet's .2. */
export const nodeAddress2 = (podSubnet: string): string => `${prefix24(nodeSubnet(podSubnet))}.2`;

/**
 * Wires node 2 (holder `holder`) to the host: the node bridge and veth, its address and the
 * route to the first node's address, and its pod bridge on the shared pod segment.
 */
export function connectNode(
  holder: number,
  o: { bridge: string; podSubnet: string; firstNodeIP: string },
): { nodeIP: string } {
  const { nodeBridge, nodeVeth, podVeth } = nodeLinks(o.bridge);
  const subnet = nodeSubnet(o.podSubnet);
  createBridge(nodeBridge, subnet);
  const gateway = bridgeAddress(subnet).split('/')[0];
  const nodeIP = nodeAddress2(o.podSubnet);
  const pid = String(holder);
  run('ip', ['link', 'add', nodeVeth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', pid]);
  run('ip', ['link', 'set', nodeVeth, 'master', nodeBridge, 'up']);
  run('ip', ['link', 'add', podVeth, 'type', 'veth', 'peer', 'name', 'pod0', 'netns', pid]);
  run('ip', ['link', 'set', podVeth, 'master', o.bridge, 'up']);
  inNode(
    holder,
    `ip addr add "$1/24" dev eth0
ip link set eth0 up
ip route add "$2/32" via "$3" dev eth0
ip link add "$4" type bridge
ip addr add "$5" dev "$4"
ip link set "$4" up
ip link set pod0 master "$4" up`,
    nodeIP,
    o.firstNodeIP,
    gateway,
    o.bridge,
    podBridgeAddress2(o.podSubnet),
  );
  return { nodeIP };
}

/** Deletes node 2's host interfaces (each veth takes its peer in the node with it). */
export function disconnectNode(bridge: string): void {
  const { nodeBridge, nodeVeth, podVeth } = nodeLinks(bridge);
  for (const link of [nodeVeth, podVeth]) {
    try {
      run('ip', ['link', 'del', 'dev', link]);
    } catch (err) {
      // Gone already: the kernel removes a veth with its peer's namespace, a moment after
      // the namespace's last process has exited.
      if (linkExists(link)) throw err;
    }
  }
  deleteBridge(nodeBridge);
}

/** Node 2's host interfaces that exist. */
export function nodeLinksLeft(bridge: string): string[] {
  if (bridge.length > 12) return [];
  return Object.values(nodeLinks(bridge)).filter(linkExists);
}
