/**
 * The optional guest-agent capability of a `HypervisorDriver`: what the QEMU guest agent
 * (or a driver's equivalent) inside a guest reports, in driver terms. The launcher turns
 * it into upstream's `VirtualMachineInstanceGuestAgentInfo` (GetGuestInfo) and the node
 * agent into VMI status (`guestOSInfo`, `interfaces`, the `AgentConnected` condition).
 */
import type { DomainRef } from './driver';

/** The guest operating system, as `guest-get-osinfo` reports it (os-release and uname). */
export interface GuestOSInfo {
  /** os-release `ID`, e.g. `debian`. */
  id?: string;
  /** os-release `NAME`. */
  name?: string;
  /** os-release `PRETTY_NAME`. */
  prettyName?: string;
  /** os-release `VERSION`. */
  version?: string;
  /** os-release `VERSION_ID`. */
  versionId?: string;
  /** `uname -r`, e.g. `6.1.0-57-amd64`. */
  kernelRelease?: string;
  /** `uname -v`. */
  kernelVersion?: string;
  /** `uname -m`, e.g. `x86_64`. */
  machine?: string;
}

/** One IP address of a guest interface. */
export interface GuestIPAddress {
  address: string;
  type: 'ipv4' | 'ipv6';
  prefix: number;
}

/** One network interface inside the guest. */
export interface GuestInterface {
  /** Name inside the guest, e.g. `eth0`, `lo`. */
  name: string;
  /** Hardware address, lowercased, when the guest reports one. */
  mac?: string;
  ipAddresses: GuestIPAddress[];
}

/** A logged-in guest user. */
export interface GuestUser {
  name: string;
  /** Windows domain, when there is one. */
  domain?: string;
  /** Login time, seconds since the epoch (fractional). */
  loginTime?: number;
}

/** A mounted guest filesystem. */
export interface GuestFilesystem {
  /** Device name in the guest, e.g. `vda1`. */
  name: string;
  mountPoint: string;
  type: string;
  usedBytes?: number;
  totalBytes?: number;
  /** The disks under it (bus type, serial) as far as the agent knows. */
  disks: Array<{ busType: string; serial?: string }>;
}

/** A guest-agent command and whether the agent has it enabled. */
export interface GuestAgentCommand {
  name: string;
  enabled: boolean;
}

/**
 * What a connected guest agent reports. Every part but `agentVersion` is optional: an
 * agent may lack a command (old agents, or ones with commands disabled), and what it
 * lacks is left out rather than failing the whole answer.
 */
export interface GuestInfo {
  /** The agent's own version (`guest-info`). */
  agentVersion: string;
  supportedCommands?: GuestAgentCommand[];
  hostname?: string;
  os?: GuestOSInfo;
  /** Time zone name and offset from UTC in seconds (east positive). */
  timezone?: { zone: string; offsetSeconds: number };
  interfaces?: GuestInterface[];
  users?: GuestUser[];
  filesystems?: GuestFilesystem[];
}

/** Reading a guest's agent, for drivers that can. */
export interface GuestAgentSupport {
  /**
   * Whether the guest agent's channel is connected (the agent in the guest opened its
   * port). False for a domain without an agent channel, or one that is not running.
   */
  connected(ref: DomainRef): Promise<boolean>;
  /**
   * What the agent reports, or undefined when no agent answers (no channel, not
   * connected, or it stopped answering): an absent agent is not an error. Rejects with a
   * `DriverError` `NotFound` when the host has no such domain.
   */
  guestInfo(ref: DomainRef): Promise<GuestInfo | undefined>;
  /**
   * Replaces `user`'s `~/.ssh/authorized_keys` in the guest with `keys` (upstream's
   * AuthorizedSSHKeysSet: `guest-ssh-add-authorized-keys` with reset, else the older
   * guest-exec/guest-file-write path, which `legacy: true` reports). Rejects with a
   * `DriverError` carrying the agent's message when neither works.
   */
  setAuthorizedKeys?(ref: DomainRef, user: string, keys: string[]): Promise<{ legacy: boolean }>;
  /**
   * Runs `command args` in the guest (`guest-exec`) and returns its exit code and standard
   * output (an exec probe). Rejects with a `DriverError` when the agent cannot run it or it
   * does not exit within `timeoutSec`.
   */
  exec?(
    ref: DomainRef,
    command: string,
    args: string[],
    timeoutSec: number,
  ): Promise<{ exitCode: number; stdout: string }>;
  /** Resolves when the agent answers `guest-ping` within `timeoutSec` (a guestAgentPing probe). */
  ping?(ref: DomainRef, timeoutSec: number): Promise<void>;
  /** Sets `user`'s password in the guest (`guest-set-user-password`, plain text). */
  setUserPassword?(ref: DomainRef, user: string, password: string): Promise<void>;
}
