/**
 * When the node agent runs network setup phase 1 for a VMI: once per launcher pod, before
 * its first sync, in the pod's network namespace (found by `netnsOf`: the local pod
 * runtime knows it; on a cluster it is the launcher process's). A VMI without
 * pod-network interfaces needs nothing.
 */
import type { VirtualMachineInstance } from '../../../api/generated/types';
import { boundInterfaces } from '../../common/network-cache';
import { podEmptyDirPath, SOCKETS_VOLUME } from '../../launcher-protocol/paths';
import { setUpPodNetwork } from './pod-nic-setup';

export interface NetworkPhase1Options {
  podsRoot: string;
  /** The network namespace path of a launcher pod, if known. */
  netnsOf?: (podUid: string) => string | undefined;
  /**
   * Owner of the taps: the account QEMU's libvirt runs as, which opens the tap itself
   * (default 107:107, upstream's qemu user, as the launcher's own virtqemud runs).
   */
  tapOwner?: { uid: number; gid: number };
}

export class NetworkPhase1 {
  private readonly done = new Set<string>();

  constructor(private readonly o: NetworkPhase1Options) {}

  /** Sets the pod's network up if it is not yet; returns an error message to retry on. */
  async ensure(vmi: VirtualMachineInstance, podUid: string): Promise<string | undefined> {
    if (this.done.has(podUid) || boundInterfaces(vmi).length === 0) return undefined;
    const subject = `VirtualMachineInstance ${vmi.metadata?.namespace}/${vmi.metadata?.name}`;
    const netns = this.o.netnsOf?.(podUid);
    if (!netns) {
      return `${subject}: spec.networks: the launcher pod ${podUid} has no network namespace this node knows (is the pod network enabled?)`;
    }
    try {
      await setUpPodNetwork(vmi, {
        netns,
        socketDir: podEmptyDirPath(this.o.podsRoot, podUid, SOCKETS_VOLUME),
      });
      this.done.add(podUid);
      if (this.done.size > 4096) this.done.clear();
      return undefined;
    } catch (err) {
      return `${subject}: network setup: ${(err as Error).message}`;
    }
  }
}
