/**
 * Network setup phase 2 in the launcher (upstream's virt-launcher side): reads the cache
 * the node agent's phase 1 wrote, gives each pod-network interface its MAC in the VMI the
 * converter sees (so the domain's NIC is the one the DHCP server answers), and runs the
 * DHCP server for the guest in the pod's network namespace (the launcher runs inside it).
 */
import type { VirtualMachineInstance } from '../../api/generated/types';
import { boundInterfaces, type CachedInterface, readNetworkCache } from '../common/network-cache';
import type { LauncherInterface } from '../launcher-protocol/domain-report';
import { dhcpBindings } from './dhcp/bindings';
import { DhcpServer } from './dhcp/server';

export class GuestNetwork {
  private dhcp: DhcpServer | undefined;
  private cached: CachedInterface[] = [];

  constructor(
    private readonly socketDir: string,
    private readonly log: (m: string) => void,
  ) {}

  /** The VMI to convert: pod-network interfaces get the cached MACs; the DHCP server runs. */
  async prepare(vmi: VirtualMachineInstance): Promise<VirtualMachineInstance> {
    if (boundInterfaces(vmi).length === 0) return vmi;
    const subject = `VirtualMachineInstance ${vmi.metadata?.namespace}/${vmi.metadata?.name}`;
    const cache = await readNetworkCache(this.socketDir);
    if (!cache || cache.interfaces.length === 0) {
      throw new Error(
        `${subject}: spec.networks: the pod network is not set up yet (no network cache from the node agent)`,
      );
    }
    const bindings = dhcpBindings(cache);
    if (!this.dhcp && bindings.length > 0) {
      const server = new DhcpServer(bindings, this.log);
      await server.start();
      this.dhcp = server;
      this.log(`dhcp: serving ${cache.interfaces.map((i) => `${i.guestIP} to ${i.mac}`).join(', ')}`);
    }
    this.cached = cache.interfaces;
    const macs = new Map(cache.interfaces.map((i) => [i.name, i.mac]));
    const interfaces = (vmi.spec.domain.devices.interfaces ?? []).map((i) =>
      macs.has(i.name) ? { ...i, macAddress: macs.get(i.name) } : i,
    );
    return {
      ...vmi,
      spec: {
        ...vmi.spec,
        domain: { ...vmi.spec.domain, devices: { ...vmi.spec.domain.devices, interfaces } },
      },
    };
  }

  /** The interfaces for the domain report: MAC, pod IP, and the guest's lease once acknowledged. */
  report(): LauncherInterface[] | undefined {
    if (this.cached.length === 0) return undefined;
    return this.cached.map((i) => {
      const leasedIP = this.dhcp?.stats.leased.get(i.mac);
      return {
        name: i.name,
        binding: i.binding,
        mac: i.mac,
        podIP: i.podIP,
        ...(leasedIP ? { leasedIP } : {}),
        ...(i.podInterface ? { podInterface: i.podInterface } : {}),
        ...(i.ipv6 ? { podIPv6: i.ipv6.podIP } : {}),
      };
    });
  }

  async stop(): Promise<void> {
    await this.dhcp?.stop();
    this.dhcp = undefined;
  }
}
