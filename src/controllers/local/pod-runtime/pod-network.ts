/**
 * Local mode's pod network, the part of kubelet + container runtime that gives a pod its
 * network: each pod gets its own network namespace (`ip netns add kvts-<uid prefix>`),
 * attached by the real CNI `bridge` plugin with `host-local` IPAM (Debian's
 * containernetworking-plugins) to a node bridge kubevirt-ts owns. The bridge has no
 * address and there is no gateway, masquerading or default route: pods reach each other
 * on the bridge and nothing leaves the machine. The ADD result is kept in the pod's
 * directory (`network.json`) so a restarted runtime knows the pod IP; teardown is CNI DEL
 * and removal of the namespace, also after a failed start.
 */
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { runTool } from '../../common/run-tool';
import { type CniConfig, type CniResult, invokeCni } from './cni';
import type { SecondaryAttachment } from './secondary-networks';

/** Options of the pod network (local mode's defaults in {@link DEFAULT_POD_NETWORK}). */
export interface PodNetworkOptions {
  /** Node bridge the pods' veths join (created by the bridge plugin). */
  bridge: string;
  /** IPv4 subnet pods get addresses from, CIDR. */
  subnet: string;
  /** Optional IPv6 subnet (a unique local one: fd00::/8), for dual-stack pods. */
  subnet6?: string;
  /** CNI plugin directory. */
  pluginDir: string;
  /** host-local's allocation directory. */
  dataDir: string;
  /** MTU of the pods' eth0 (default: the bridge plugin's, 1500). */
  mtu?: number;
}

/** Defaults: a subnet unlikely to clash with a host's, Debian's plugin directory. */
export const DEFAULT_POD_NETWORK = {
  bridge: 'kvts0',
  subnet: '10.244.77.0/24',
  pluginDir: '/usr/lib/cni',
} as const;

/** What a pod's network is: its namespace, address and interface. */
export interface PodNetworkInfo {
  /** Path of the network namespace (`/run/netns/<name>`). */
  netns: string;
  /** Pod IP without prefix length. */
  ip: string;
  /** Address with prefix length, e.g. `10.244.77.2/24`. */
  cidr: string;
  ifName: 'eth0';
  mac?: string;
  /** The IPv6 address with prefix length, with a dual-stack pod network. */
  cidr6?: string;
  /** Secondary networks attached (Multus's job on a cluster), kept so DEL runs with the same configuration. */
  secondary?: SecondaryNetworkInfo[];
  /** Set while the secondary networks are being attached. */
  partial?: true;
}

/** A secondary interface of the pod, as attached. */
export interface SecondaryNetworkInfo {
  network: string;
  ifName: string;
  config: CniConfig;
  /** Its address with prefix length, when the plugin's IPAM gave one. */
  cidr?: string;
}

const NETWORK_FILE = 'network.json';
const NAME = /^[a-z][a-z0-9-]{0,14}$/;
const CIDR4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;

/** Checks the options at the boundary: they reach process arguments and the CNI config. */
export function checkPodNetworkOptions(o: PodNetworkOptions): void {
  if (!NAME.test(o.bridge)) {
    throw new Error(
      `pod network: bridge ${JSON.stringify(o.bridge)} is not an interface name (a-z, 0-9, -, at most 15)`,
    );
  }
  const m = CIDR4.exec(o.subnet);
  const octets = m ? m.slice(1, 5).map(Number) : [];
  const prefix = m ? Number(m[5]) : -1;
  if (!m || octets.some((x) => x > 255) || prefix < 8 || prefix > 30) {
    throw new Error(
      `pod network: subnet ${JSON.stringify(o.subnet)} is not an IPv4 CIDR with a prefix of 8 to 30`,
    );
  }
  if (o.subnet6 !== undefined) {
    const [addr, len] = o.subnet6.split('/');
    if (
      !/^fd[0-9a-f]{2}:[0-9a-f:]*$/i.test(addr ?? '') ||
      !/^\d+$/.test(len ?? '') ||
      Number(len) < 64 ||
      Number(len) > 120
    ) {
      throw new Error(
        `pod network: subnet6 ${JSON.stringify(o.subnet6)} is not a unique local IPv6 CIDR (fdxx::/64 to /120)`,
      );
    }
  }
  if (o.mtu !== undefined && (!Number.isInteger(o.mtu) || o.mtu < 576 || o.mtu > 65535)) {
    throw new Error(`pod network: mtu ${o.mtu} is not between 576 and 65535`);
  }
}

/** Namespace name of a pod: `kvts-` plus its uid's 32 hex digits (unique per uid). */
export function netnsName(podUid: string): string {
  const hex = podUid.toLowerCase().replace(/[^0-9a-f]/g, '');
  if (hex.length < 16)
    throw new Error(`pod uid ${JSON.stringify(podUid)} has too few hex digits for a namespace name`);
  return `kvts-${hex.slice(0, 32)}`;
}

/** Attaches and detaches pods; one per pod runtime. */
export class PodNetwork {
  constructor(private readonly o: PodNetworkOptions) {
    checkPodNetworkOptions(o);
  }

  private config(): CniConfig {
    return {
      cniVersion: '1.0.0',
      name: 'kubevirt-ts',
      type: 'bridge',
      bridge: this.o.bridge,
      isGateway: false,
      ipMasq: false,
      hairpinMode: false,
      ...(this.o.mtu ? { mtu: this.o.mtu } : {}),
      ipam: {
        type: 'host-local',
        ranges: [[{ subnet: this.o.subnet }], ...(this.o.subnet6 ? [[{ subnet: this.o.subnet6 }]] : [])],
        dataDir: this.o.dataDir,
      },
    };
  }

  private call(command: 'ADD' | 'DEL', podUid: string, config = this.config(), ifName = 'eth0') {
    return invokeCni(config, {
      command,
      containerId: podUid,
      netns: `/run/netns/${netnsName(podUid)}`,
      ifName,
      pluginDir: this.o.pluginDir,
    });
  }

  /**
   * Creates the pod's namespace and attaches it; the info is also written to
   * `<podDir>/network.json`. Each of `secondary` is attached after eth0 with its own
   * plugin and interface name. On any failure what was made is removed again.
   */
  async setUp(
    podUid: string,
    podDir: string,
    secondary: SecondaryAttachment[] = [],
  ): Promise<PodNetworkInfo> {
    const existing = await this.read(podDir);
    if (existing && !existing.partial) return existing;
    // A set-up cut short (the runtime died in it): undo it and start again.
    if (existing) await this.tearDown(podUid, podDir);
    const name = netnsName(podUid);
    await runTool('ip', ['netns', 'add', name]);
    try {
      await runTool('ip', ['-n', name, 'link', 'set', 'lo', 'up']);
      const result = await this.call('ADD', podUid);
      const info = podInfo(`/run/netns/${name}`, result);
      const attached: SecondaryNetworkInfo[] = [];
      // Recorded before each ADD: a failed one is still DELeted by the teardown below.
      const record = () =>
        writeFile(
          join(podDir, NETWORK_FILE),
          JSON.stringify({ ...info, secondary: attached, partial: true }),
        );
      for (const s of secondary) {
        attached.push({ network: s.network, ifName: s.ifName, config: s.config });
        await record();
        const r = await this.call('ADD', podUid, s.config, s.ifName).catch((e: Error) => {
          throw new Error(`network ${s.network} (${s.ifName}): ${e.message}`);
        });
        const ip = r.ips?.find((x) => !x.address.includes(':'));
        if (ip) attached[attached.length - 1].cidr = ip.address;
      }
      if (attached.length) info.secondary = attached;
      await writeFile(join(podDir, NETWORK_FILE), JSON.stringify(info), { mode: 0o644 });
      return info;
    } catch (err) {
      await this.tearDown(podUid, podDir).catch(() => undefined);
      throw err;
    }
  }

  /** The recorded network of a pod (after a runtime restart), if any. */
  async read(podDir: string): Promise<PodNetworkInfo | undefined> {
    try {
      return JSON.parse(await readFile(join(podDir, NETWORK_FILE), 'utf8')) as PodNetworkInfo;
    } catch {
      return undefined;
    }
  }

  /** CNI DEL (releases the address, removes the veth) and removal of the namespace; idempotent. */
  async tearDown(podUid: string, podDir: string): Promise<void> {
    const name = netnsName(podUid);
    const present = (await runTool('ip', ['netns', 'list']))
      .split('\n')
      .some((l) => l.split(' ')[0] === name);
    const recorded = await this.read(podDir);
    if (!present && !recorded) return;
    let delError: Error | undefined;
    for (const s of [...(recorded?.secondary ?? [])].reverse()) {
      await this.call('DEL', podUid, s.config, s.ifName).catch((e: Error) => {
        delError = e;
      });
    }
    // DEL must be tolerated for a sandbox that was never (fully) added (CNI spec).
    await this.call('DEL', podUid).catch((e: Error) => {
      delError = e;
    });
    if (present) await runTool('ip', ['netns', 'delete', name]);
    await rm(join(podDir, NETWORK_FILE), { force: true });
    if (delError && present) throw delError;
  }
}

function podInfo(netns: string, result: CniResult): PodNetworkInfo {
  const sandboxIdx = result.interfaces?.findIndex((i) => i.sandbox !== undefined) ?? -1;
  const ip =
    result.ips?.find((x) => x.interface === sandboxIdx && !x.address.includes(':')) ?? result.ips?.[0];
  if (!ip) throw new Error('CNI ADD returned no IP address for eth0');
  const ip6 = result.ips?.find((x) => x.interface === sandboxIdx && x.address.includes(':'));
  return {
    ...(ip6 ? { cidr6: ip6.address } : {}),
    netns,
    ip: ip.address.split('/')[0],
    cidr: ip.address,
    ifName: 'eth0',
    ...(sandboxIdx >= 0 && result.interfaces?.[sandboxIdx]?.mac
      ? { mac: result.interfaces[sandboxIdx].mac }
      : {}),
  };
}
