/** What a {@link VirtHandler} is given: its clients, node, paths and the host probe. */
import type { Logger } from 'pino';
import type { MigrationConfiguration } from '../../api/generated/types';
import type { HostCapabilities, HypervisorDriver } from '../../drivers/driver';
import type { ObjectClient } from '../runtime/types';
import type { MigrationProxyWiring } from './migration-proxy/wiring';

/** Options of `VirtHandler` (handler.ts). */
export interface VirtHandlerOptions {
  client: ObjectClient;
  nodeName: string;
  /** Root of pod directories (kubelet's `/var/lib/kubelet/pods`, or the local pod runtime's). */
  podsRoot: string;
  /** Path of the handler's own notify socket (launchers reach it through per-pod pipes). */
  notifySocket: string;
  /** The host probe (the driver's `probe()`), for node labels and device resources. */
  capabilities: () => Promise<HostCapabilities>;
  /** Extra node labels and device resources for a host's capabilities (the driver plugins'). */
  extraLabels?: (caps: HostCapabilities) => Record<string, string>;
  extraResources?: (caps: HostCapabilities) => Record<string, number>;
  /** Register and heartbeat the Node (default true). */
  registerNode?: boolean;
  /**
   * Serve kvm, tun, vhost-net (and sev) as kubelet device plugins in this directory
   * (the kubelet's /var/lib/kubelet/device-plugins) instead of writing them into the
   * Node's capacity: on a node with a kubelet, which then owns capacity and hands the
   * device nodes to launcher pods.
   */
  devicePluginDir?: string;
  /**
   * How many of each shared device (kvm, tun, vhost-net) the node offers: the most VMIs
   * it runs (upstream's --max-devices, default 1000).
   */
  maxDevices?: number;
  heartbeatMs?: number;
  /** How often every VMI on the node is looked at again, catching dead launchers (default 5 s). */
  resyncMs?: number;
  /** Launcher call deadline (default 30 s). */
  launcherTimeoutMs?: number;
  /**
   * A driver on this host, used only to remove the domain a dead launcher left behind (in
   * a real pod QEMU dies with the launcher's cgroup; under a shared libvirtd it would not).
   */
  orphanDriver?: () => Promise<HypervisorDriver>;
  /** Workers (default 4). */
  workers?: number;
  /**
   * What this node offers a migration source as `status.migrationState.targetNodeAddress`:
   * host[:port] of its libvirtd's TCP listener, or a libvirt URI. Without it this node
   * cannot be a migration target (such migrations fail, saying so).
   */
  migrationAddress?: string;
  /** The cluster's migration configuration (upstream defaults when absent). */
  migrationConfig?: () => MigrationConfiguration;
  /**
   * Upstream's migration proxy: migrations between handlers over mutual TLS (./migration-proxy).
   * Without it the source's launcher reaches `migrationAddress` directly.
   */
  migrationProxy?: MigrationProxyWiring;
  /**
   * The network namespace of a launcher pod (the local pod runtime's `networkOf(uid).netns`),
   * for network setup phase 1, in local mode; without it (and without `procRoot`) VMIs
   * with pod-network interfaces wait, saying so.
   */
  podNetns?: (podUid: string) => string | undefined;
  /**
   * On a node with a kubelet: the host's /proc (`/proc` with hostPID), where the handler
   * finds each launcher pod's compute container process and sets up its network namespace
   * and devices (launcher-pod-setup.ts). Wins over `podNetns`.
   */
  procRoot?: string;
  /**
   * The host's cgroup mount as the handler sees it (upstream's `/proc/1/root/sys/fs/cgroup`,
   * the default; the manifests mount the host's `/sys/fs/cgroup` instead): where a
   * hotplugged block device is allowed in a launcher's devices cgroup (./device-cgroup).
   */
  cgroupRoot?: string;
  /** Called for every write the handler makes. */
  onWrite?: (kind: 'VirtualMachineInstance' | 'Node', name: string) => void;
  log?: (message: string) => void;
  /** Structured logs (pino): VMI lines carry the VMI's kind, namespace, name and uid. Overrides `log`. */
  logger?: Logger;
}
