/**
 * The pod network without touching the host's: a bridge the cluster creates with the
 * subnet's `.1` address, and the CNI bridge plugin with host-local IPAM on it, no gateway,
 * no masquerading, so pods get no default route, ip_forward stays as it was and no
 * iptables rule is written. Pods reach each other and this machine's own addresses only.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from './state';

/** Where Debian's containernetworking-plugins installs the plugins. */
export const CNI_BIN_DIR = '/usr/lib/cni';

/** Validates a /24 subnet "a.b.c.0/24" and returns its `.1` gateway-less host address. */
export function bridgeAddress(subnet: string): string {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.0\/24$/.exec(subnet);
  if (!m || m.slice(1).some((o) => Number(o) > 255)) {
    throw new Error(`pod subnet ${JSON.stringify(subnet)}: expected an IPv4 /24 like 10.244.0.0/24`);
  }
  return `${m[1]}.${m[2]}.${m[3]}.1/24`;
}

/** Checks a Linux interface name (they reach `ip` as arguments). */
export function checkBridgeName(name: string): void {
  if (!/^[a-z][a-z0-9-]{0,14}$/.test(name)) {
    throw new Error(`bridge name ${JSON.stringify(name)}: use [a-z][a-z0-9-], at most 15 characters`);
  }
}

/** True when interface `name` exists. */
export function linkExists(name: string): boolean {
  try {
    run('ip', ['link', 'show', 'dev', name]);
    return true;
  } catch {
    return false;
  }
}

/** Creates the bridge with the subnet's .1 address (idempotent). */
export function createBridge(name: string, subnet: string): void {
  checkBridgeName(name);
  const addr = bridgeAddress(subnet);
  if (!linkExists(name)) run('ip', ['link', 'add', 'name', name, 'type', 'bridge']);
  const addrs = run('ip', ['-o', '-4', 'addr', 'show', 'dev', name]);
  if (!addrs.includes(` ${addr} `)) run('ip', ['addr', 'add', addr, 'dev', name]);
  run('ip', ['link', 'set', 'dev', name, 'up']);
}

/** Deletes the bridge (its veths go with the pods; any left go with it). */
export function deleteBridge(name: string): void {
  checkBridgeName(name);
  if (linkExists(name)) run('ip', ['link', 'del', 'dev', name]);
}

/**
 * Writes the CNI network list into `<cniDir>/net.d/` for containerd's CRI plugin (or for
 * Multus, which delegates the cluster network to it); returns the file.
 */
export function writeCniConfig(
  cniDir: string,
  bridge: string,
  subnet: string,
  range?: { start: string; end: string },
  /** Pods route the service range (kube-proxy.ts) through this address, their node's. */
  serviceRoute?: { dst: string; gw: string },
): string {
  bridgeAddress(subnet);
  const netd = join(cniDir, 'net.d');
  mkdirSync(netd, { recursive: true });
  const conf = {
    cniVersion: '0.4.0',
    name: 'kubevirt-ts',
    plugins: [
      {
        type: 'bridge',
        bridge,
        isGateway: false,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          // With two nodes on one L2 segment, each allocates from its own share.
          ...(range ? { ranges: [[{ subnet, rangeStart: range.start, rangeEnd: range.end }]] } : { subnet }),
          dataDir: join(cniDir, 'ipam'),
          ...(serviceRoute ? { routes: [serviceRoute] } : {}),
        },
      },
    ],
  };
  const file = join(netd, '10-kubevirt-ts.conflist');
  writeFileSync(file, `${JSON.stringify(conf, null, 2)}\n`);
  return file;
}

/** The IPv4 address of interface `dev` (the kubelet rejects a loopback node IP). */
export function interfaceIPv4(dev: string): string {
  const out = run('ip', ['-o', '-4', 'addr', 'show', 'dev', dev]);
  const m = /inet (\d+\.\d+\.\d+\.\d+)\//.exec(out);
  if (!m) throw new Error(`interface ${dev} has no IPv4 address: set --node-ip`);
  return m[1];
}
