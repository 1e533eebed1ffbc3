/**
 * The masquerade binding's nftables ruleset in the pod's network namespace (upstream's
 * pkg/network/driver/nft + the masquerade binding): the guest's traffic leaves with the
 * pod IP (masquerade), traffic to the pod IP on the declared ports (all, when none are
 * declared, as upstream) is forwarded to the guest. Pure: the setup feeds it to `nft -f -`.
 * Connections made inside the pod to the pod's own address (not loopback) are forwarded
 * the same way (the output chain): the pod IP is the guest's, and that is how a prober
 * without a route to the pod network (local mode's pod runtime) reaches the guest's ports.
 * Not done (upstream has it): forwarding of the pod's own loopback connections to the guest.
 */
import type { Port } from '../../../api/generated/types';

/** Addresses of the masquerade binding (upstream's defaults). */
export const MASQUERADE = {
  guestIP: '10.0.2.2',
  gatewayIP: '10.0.2.1',
  prefixLength: 24,
  /** The in-pod bridge's MAC, reserved (admission refuses it for guests). */
  bridgeMAC: '02:00:00:00:00:00',
} as const;

/** IPv6 addresses of the binding (upstream's), used when the pod has an IPv6 address. */
export const MASQUERADE6 = {
  guestIP: 'fd10:0:2::2',
  gatewayIP: 'fd10:0:2::1',
  prefixLength: 120,
} as const;

/** The nftables table the binding owns in the pod's namespace. */
export const NAT_TABLE = 'kubevirt_nat';

const IFNAME = /^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,14}$/;

/** One forwarded port group per protocol. */
function forwards(ports: Port[] | undefined, subject: string, guestIP: string): string[] {
  if (!ports || ports.length === 0) return [`counter dnat to ${guestIP}`];
  const byProto = new Map<string, number[]>();
  ports.forEach((p, i) => {
    const proto = (p.protocol ?? 'TCP').toUpperCase();
    if (proto !== 'TCP' && proto !== 'UDP')
      throw new Error(`${subject}.ports[${i}].protocol: ${JSON.stringify(p.protocol)} is not TCP or UDP`);
    if (!Number.isInteger(p.port) || p.port < 1 || p.port > 65535) {
      throw new Error(
        `${subject}.ports[${i}].port: ${JSON.stringify(p.port)} is not a port number (1-65535)`,
      );
    }
    const list = byProto.get(proto) ?? [];
    list.push(p.port);
    byProto.set(proto, list);
  });
  return [...byProto].map(
    ([proto, list]) =>
      `${proto.toLowerCase()} dport { ${[...new Set(list)].join(', ')} } counter dnat to ${guestIP}`,
  );
}

/**
 * The ruleset text for `nft -f -`: recreates the table from scratch, so applying it again
 * is idempotent. `podIf` is the pod's interface (eth0), `bridge` the in-pod bridge the guest's tap is on.
 */
export function masqueradeRuleset(o: {
  podIf: string;
  bridge: string;
  ports?: Port[];
  subject: string;
  /** `ip6`: the same rules for the guest's IPv6 address (upstream's dual-stack masquerade). */
  family?: 'ip' | 'ip6';
}): string {
  for (const n of [o.podIf, o.bridge])
    if (!IFNAME.test(n)) throw new Error(`${o.subject}: ${JSON.stringify(n)} is not an interface name`);
  const family = o.family ?? 'ip';
  const guestIP = family === 'ip6' ? MASQUERADE6.guestIP : MASQUERADE.guestIP;
  const rules = forwards(o.ports, o.subject, guestIP);
  return [
    `table ${family} ${NAT_TABLE}`,
    `delete table ${family} ${NAT_TABLE}`,
    `table ${family} ${NAT_TABLE} {`,
    '  chain prerouting {',
    '    type nat hook prerouting priority dstnat; policy accept;',
    `    iifname "${o.podIf}" counter jump KUBEVIRT_PREINBOUND`,
    '  }',
    '  chain output {',
    '    type nat hook output priority -100; policy accept;',
    `    fib daddr type local ${family} daddr != ${family === 'ip6' ? '::1' : '127.0.0.0/8'} counter jump KUBEVIRT_PREINBOUND`,
    '  }',
    '  chain postrouting {',
    '    type nat hook postrouting priority srcnat; policy accept;',
    `    ${family} saddr ${guestIP} oifname "${o.podIf}" counter masquerade`,
    '  }',
    '  chain KUBEVIRT_PREINBOUND {',
    ...rules.map((r) => `    ${r}`),
    '  }',
    '}',
    '',
  ].join('\n');
}
