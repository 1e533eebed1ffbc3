/**
 * What a launcher reports about its domain (GetDomain and the notify events). Shared by
 * the launcher and the node agent; the sockets it names are in ./paths.
 */
import type { DomainState } from '../../drivers/driver';
import type { LauncherGuestAgent } from './guest-agent-report';

/** A launcher's view of its domain. */
export interface LauncherDomain {
  /** libvirt domain name `<namespace>_<name>`. */
  name: string;
  uuid: string;
  state: DomainState;
  reason: string;
  /** Changes on every start of the guest; empty while it is not running. */
  bootId: string;
  vcpus: number;
  memoryKiB: number;
  /** The VMI uid the launcher runs. */
  vmiUid: string;
  /** The guest ran under this launcher and is now gone or powered off: it will not run again. */
  finished: boolean;
  /** Console socket name in the sockets dir, once the console is attached. */
  console?: string;
  /** VNC socket name in the sockets dir, when the domain has VNC. */
  vnc?: string;
  /** The guest agent, when the driver can read one. */
  guestAgent?: LauncherGuestAgent;
  /**
   * The last guest-agent access-credential sync (upstream's domain metadata
   * AccessCredential); absent when the VMI has no qemuGuestAgent credentials.
   */
  accessCredential?: LauncherAccessCredential;
  /** `frozen` from a FreezeVirtualMachine until the guest is thawed (upstream's VMI status.fsFreezeStatus). */
  fsFreezeStatus?: 'frozen';
  /** The live migration this launcher takes part in (upstream's domain migration metadata). */
  migration?: LauncherMigrationState;
  /** The guest's pod-network interfaces as the network setup made them. */
  interfaces?: LauncherInterface[];
  /** The hotplugged volumes the domain has attached now (volume hotplug). */
  hotplugVolumes?: string[];
  /**
   * The VMI's interfaces on secondary (multus) networks that the domain has now (NIC
   * hotplug), once the launcher knows them; status.interfaces lists those and no others.
   */
  secondaryInterfaces?: string[];
  /** The last memory dump asked of this launcher (upstream's domain metadata MemoryDump). */
  memoryDump?: LauncherMemoryDumpState;
}

/** A memory dump as the launcher reports it: upstream's `MemoryDumpMetadata`. */
export interface LauncherMemoryDumpState {
  /** The dump file's name (the handler's `targetFileName`). */
  fileName: string;
  /** RFC 3339. */
  startTimestamp: string;
  /** RFC 3339, once the dump ended. */
  endTimestamp?: string;
  completed: boolean;
  failed: boolean;
  failureReason?: string;
}

/** One interface the launcher's network setup serves (status.interfaces reads it). */
export interface LauncherInterface {
  /** The VMI interface name. */
  name: string;
  binding: 'masquerade' | 'bridge' | 'passt';
  mac: string;
  /** The pod's address on the network (what masquerade exposes). */
  podIP: string;
  /** The address the DHCP server acknowledged to the guest, once it did. */
  leasedIP?: string;
  /** The pod's IPv6 address, when masquerade NATs the guest's IPv6 too. */
  podIPv6?: string;
  /** The pod interface it is bound to (upstream's status.interfaces[].podInterfaceName). */
  podInterface?: string;
}

/**
 * A live migration as the launcher reports it: upstream's `MigrationMetadata` (the
 * domain metadata virt-handler reads to write `status.migrationState`), plus which side
 * this launcher is on and the last progress figures.
 */
export interface LauncherMigrationState {
  /** The VirtualMachineInstanceMigration's UID. */
  uid: string;
  /** `source` sends the guest; `target` receives it. */
  role: 'source' | 'target';
  /** RFC 3339. */
  startTimestamp: string;
  /** Set once the migration ended (completed, failed, or aborted). */
  endTimestamp?: string;
  completed?: boolean;
  failed?: boolean;
  failureReason?: string;
  /** Upstream's MigrationAbortStatus: `Aborting`, `Succeeded`, `Failed`. */
  abortStatus?: 'Aborting' | 'Succeeded' | 'Failed';
  /** Upstream's MigrationMode (`Paused`: the source guest was paused so the copy converges). */
  mode: 'PreCopy' | 'PostCopy' | 'Paused';
  /** Source side: the libvirt URI of the target. */
  targetUri?: string;
  /** Source side: bytes of the job, from the last look at it. */
  dataTotal?: number;
  dataProcessed?: number;
  dataRemaining?: number;
}

/** Whether the guest agent got the VMI's access credentials, and why not. */
export interface LauncherAccessCredential {
  succeeded: boolean;
  /** Empty on success; the failure otherwise (e.g. `Guest agent is offline`). */
  message: string;
}
