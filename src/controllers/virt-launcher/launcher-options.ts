/** What a `VirtLauncher` (launcher.ts) is given: the VMI it runs, its sockets directory, its driver and hooks. */
import type { VirtualMachineInstance } from '../../api';
import type { HypervisorDriver, SyncOptions } from '../../drivers/driver';
import type { LauncherInterface } from '../launcher-protocol/domain-report';

/** Options of `VirtLauncher`. */
export interface VirtLauncherOptions {
  namespace: string;
  name: string;
  uid: string;
  /** Seconds a graceful stop (SIGTERM) gives the guest before killing it. */
  gracePeriodSeconds: number;
  /** Host directory of the pod's `sockets` volume. */
  socketDir: string;
  /** Builds (and after a lost connection, rebuilds) the driver. */
  connectDriver: () => Promise<HypervisorDriver>;
  /** Creates the files the domain points at (overlays, ISO images) before each sync. */
  prepareVolumes?: (vmi: VirtualMachineInstance) => Promise<void>;
  /**
   * The converter's set of volumes that are block devices (the launcher passes the same set
   * to its driver): the hotplug step adds the hotplugged volumes whose node in the hotplug
   * directory is a block device (./hotplug-disks), as upstream's isHotplugBlockDeviceVolume.
   */
  blockVolumes?: Set<string>;
  /** Network setup phase 2 before each sync: the VMI to convert (MACs), the DHCP server. */
  prepareNetwork?: (vmi: VirtualMachineInstance) => Promise<VirtualMachineInstance>;
  /**
   * Processes the domain needs besides libvirt's (passt where libvirt cannot start it,
   * ./passt-process): started before each sync, stopped when the domain fails to start
   * and when the launcher exits.
   */
  networkBackends?: {
    start(vmi: VirtualMachineInstance, driver: HypervisorDriver): Promise<void>;
    stop(): Promise<void>;
  };
  /** The network setup's interfaces for the domain report. */
  networkReport?: () => LauncherInterface[] | undefined;
  /** How `sync` treats the VMI (emulation allowed, ...). */
  syncOptions?: SyncOptions;
  /** After the domain is gone, how long to wait for the node agent's DeleteVirtualMachine before exiting (default 30 s). */
  finalWaitMs?: number;
  /** How often a connected guest agent is read, ms (default 10 s, as upstream). */
  agentPollMs?: number;
  /** How often an unconnected agent channel is looked at besides the agent events, ms (default 30 s). */
  agentConnectPollMs?: number;
  /** Host directory of an access-credential Secret the pod mounts (default: the pod path itself). */
  accessCredentialDir?: (secretName: string) => string;
  /** Host directory of the pod's `hotplug-disks` volume (default: the pod path itself). */
  hotplugDir?: string;
  /** Where progress and errors go (default: stderr). */
  log?: (message: string) => void;
  /** How often an outgoing migration's job is looked at, ms (default 400, as upstream). */
  migrationPollMs?: number;
  /** Runs last on exit, after the driver is closed (stops the launcher's own libvirt daemons). */
  onExit?: () => Promise<void>;
}
