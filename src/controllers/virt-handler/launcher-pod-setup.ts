/**
 * What the node agent prepares in a launcher pod before the VMI's first sync, once per
 * pod (upstream's virt-handler before SyncVirtualMachine): on a node with a kubelet it
 * finds the compute container's process (isolation/launcher-process.ts), makes the
 * container's /dev/kvm (and /dev/vhost-vsock) the qemu user's, and runs network setup
 * phase 1 in the pod's network namespace; in local mode the pod runtime names the
 * namespace and there is no container to look into.
 */
import { join } from 'node:path';
import type { VirtualMachineInstance } from '../../api/generated/types';
import { boundInterfaces } from '../common/network-cache';
import type { Pod } from '../common/pod';
import { podEmptyDirPath, SOCKETS_VOLUME } from '../launcher-protocol/paths';
import { claimDeviceOwnership, QEMU_OWNER } from './isolation/device-ownership';
import { detectLauncherIsolation, type LauncherIsolation } from './isolation/launcher-process';
import { setUpPodNetwork } from './network/pod-nic-setup';

export interface LauncherPodSetupOptions {
  podsRoot: string;
  /** The network namespace of a launcher pod the node's own pod runtime runs (local mode). */
  netnsOf?: (podUid: string) => string | undefined;
  /**
   * The host's /proc, where launcher pods are a kubelet's containers: the compute
   * container's process is found there (the handler must be in the host's PID namespace).
   */
  procRoot?: string;
}

/** Whether the compute container runs as someone other than root. */
function nonRootLauncher(pod: Pod): boolean {
  const c = pod.spec?.containers.find((x) => x.name === 'compute');
  const uid = c?.securityContext?.runAsUser ?? pod.spec?.securityContext?.runAsUser;
  return uid !== undefined && uid !== 0;
}

/** Whether the compute container asks a device plugin for `resource`. */
function requests(pod: Pod, resource: string): boolean {
  const r = pod.spec?.containers.find((x) => x.name === 'compute')?.resources;
  return Number(r?.limits?.[resource] ?? r?.requests?.[resource] ?? 0) > 0;
}

export class LauncherPodSetup {
  private readonly done = new Set<string>();

  constructor(private readonly o: LauncherPodSetupOptions) {}

  /** Prepares the pod if it is not yet; returns an error message to retry on. */
  async ensure(vmi: VirtualMachineInstance, pod: Pod): Promise<string | undefined> {
    const podUid = pod.metadata?.uid ?? '';
    if (this.done.has(podUid)) return undefined;
    const subject = `VirtualMachineInstance ${vmi.metadata?.namespace}/${vmi.metadata?.name}`;
    const network = boundInterfaces(vmi).length > 0;
    try {
      let netns: string | undefined;
      let iso: LauncherIsolation | undefined;
      if (this.o.procRoot) {
        iso = await detectLauncherIsolation(pod, this.o.procRoot);
        netns = iso.netns;
        await this.claimDevices(vmi, pod, iso);
      } else {
        netns = this.o.netnsOf?.(podUid);
        if (network && !netns)
          return `${subject}: spec.networks: the launcher pod ${podUid} has no network namespace this node knows (is the pod network enabled?)`;
      }
      if (network && netns) {
        await setUpPodNetwork(vmi, {
          netns,
          socketDir: podEmptyDirPath(this.o.podsRoot, podUid, SOCKETS_VOLUME),
          // The pod's own resolv.conf (the kubelet's); local mode's pods share the host's.
          resolvConf: iso ? join(iso.root, 'etc', 'resolv.conf') : undefined,
          launcherUser: iso && nonRootLauncher(pod) ? QEMU_OWNER : undefined,
        });
      }
      this.done.add(podUid);
      if (this.done.size > 4096) this.done.clear();
      return undefined;
    } catch (err) {
      return `${subject}: launcher pod set-up: ${(err as Error).message}`;
    }
  }

  /** /dev/kvm (when the pod was given it) and /dev/vhost-vsock (autoattachVSOCK) to the qemu user. */
  private async claimDevices(vmi: VirtualMachineInstance, pod: Pod, iso: LauncherIsolation): Promise<void> {
    const kvm = await claimDeviceOwnership(iso.root, 'kvm');
    if (!kvm && requests(pod, 'devices.kubevirt.io/kvm'))
      throw new Error(`${iso.root}/dev/kvm: missing, though the pod was allocated devices.kubevirt.io/kvm`);
    if (
      vmi.spec.domain.devices.autoattachVSOCK === true &&
      !(await claimDeviceOwnership(iso.root, 'vhost-vsock'))
    )
      throw new Error(`${iso.root}/dev/vhost-vsock: missing (spec.domain.devices.autoattachVSOCK)`);
  }
}
