/** The DHCP server's leases from the network setup's cache (one per prepared interface). */
import type { NetworkCache } from '../../common/network-cache';
import type { DhcpBinding } from './server';

/** Upstream offers an infinite lease: the address never changes while the pod lives. */
const INFINITE = 0xffffffff;

export function dhcpBindings(cache: NetworkCache): DhcpBinding[] {
  // passt answers its guest's DHCP itself; a secondary network without IPAM has nothing to offer.
  return cache.interfaces
    .filter((i) => i.binding !== 'passt' && i.guestIP !== '')
    .map((i) => ({
      mac: i.mac,
      lease: {
        ip: i.guestIP,
        prefixLength: i.prefixLength,
        serverIP: i.serverIP,
        router: i.gateway,
        dns: i.dns,
        domain: i.searchDomains[0],
        hostname: i.hostname,
        mtu: i.mtu,
        leaseSeconds: INFINITE,
      },
    }));
}
