/**
 * What a launcher reports about its domain (GetDomain and the notify events), and the
 * names of the sockets it keeps in the pod's sockets directory. Shared by the launcher
 * and the node agent.
 */
import type { DomainState } from '../../drivers/driver';

/** The launcher's command socket is `launcher-sock` (see launcher-protocol/paths). */
/** The guest's serial console relay. */
export const CONSOLE_SOCKET = 'virt-serial0';
/** The guest's VNC display. */
export const VNC_SOCKET = 'virt-vnc';
/** The node agent's notify pipe the launcher sends domain events to (upstream's name). */
export const NOTIFY_PIPE_SOCKET = 'domain-notify-pipe.sock';

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
}
