/**
 * What a launcher reports about its guest's agent: the small part that goes with every
 * domain report (GetDomain and notify events; the node agent turns it into VMI status),
 * and upstream's `VirtualMachineInstanceGuestAgentInfo`, which GetGuestInfo answers
 * (virtctl guestosinfo).
 */
import type { VirtualMachineInstanceGuestAgentInfo } from '../../api/generated/types';
import type { GuestInfo, GuestInterface, GuestOSInfo } from '../../drivers/guest-agent';

/** The guest agent in a domain report. Absent when the driver cannot read an agent. */
export interface LauncherGuestAgent {
  /** The agent's channel is connected (upstream: channel target state `connected`). */
  connected: boolean;
  /** From the last answer of a connected agent. */
  os?: GuestOSInfo;
  hostname?: string;
  interfaces?: GuestInterface[];
}

/** Upstream's per-list cap on users and filesystems in GetGuestInfo. */
const LIST_LIMIT = 10;

/** The report part of a connected agent's answer (or a disconnected channel). */
export function guestAgentReport(connected: boolean, info: GuestInfo | undefined): LauncherGuestAgent {
  if (!connected || !info) return { connected };
  return { connected, os: info.os, hostname: info.hostname, interfaces: info.interfaces };
}

/**
 * Upstream's `VirtualMachineInstanceGuestAgentInfo` for an agent's answer, as upstream's
 * launcher builds it: timezone as `"<zone>, <offset seconds>"`, at most 10 users and 10
 * filesystems.
 */
export function toGuestAgentInfo(info: GuestInfo): VirtualMachineInstanceGuestAgentInfo {
  const out: VirtualMachineInstanceGuestAgentInfo = {
    guestAgentVersion: info.agentVersion,
    hostname: info.hostname ?? '',
    os: { ...(info.os ?? {}) },
    timezone: info.timezone ? `${info.timezone.zone}, ${info.timezone.offsetSeconds}` : '',
  };
  if (info.supportedCommands) {
    out.supportedCommands = info.supportedCommands.map((c) => ({ name: c.name, enabled: c.enabled }));
  }
  const users = (info.users ?? []).slice(0, LIST_LIMIT);
  if (users.length > 0) {
    out.userList = users.map((u) => ({
      userName: u.name,
      ...(u.domain !== undefined ? { domain: u.domain } : {}),
      ...(u.loginTime !== undefined ? { loginTime: u.loginTime } : {}),
    }));
  }
  out.fsInfo = {
    disks: (info.filesystems ?? []).slice(0, LIST_LIMIT).map((f) => ({
      diskName: f.name,
      mountPoint: f.mountPoint,
      fileSystemType: f.type,
      usedBytes: f.usedBytes ?? 0,
      totalBytes: f.totalBytes ?? 0,
      ...(f.disks.length > 0
        ? { disk: f.disks.map((d) => ({ busType: d.busType, ...(d.serial ? { serial: d.serial } : {}) })) }
        : {}),
    })),
  };
  return out;
}
