/**
 * Which libvirt log filters a launcher's daemon runs with: upstream's getLibvirtLogFilters
 * (pkg/virt-launcher/virtwrap/util/libvirt_helper.go). The VMI's own filters first; else,
 * when the launcher's verbosity is above upstream's threshold (5) or virt-controller set
 * `LIBVIRT_DEBUG_LOGS` (the VMI's `debugLogs: "true"` label), upstream's filter set for that
 * verbosity; else none (the daemon's defaults: warnings and errors).
 */
import type { VirtualMachineInstance } from '../../api/generated/types';
import { debugLogsRequested } from '../../api/launcher-log-labels';

/** upstream's ENV_VAR_LIBVIRT_DEBUG_LOGS. */
export const LIBVIRT_DEBUG_LOGS_ENV = 'LIBVIRT_DEBUG_LOGS';
/** upstream's EXT_LOG_VERBOSITY_THRESHOLD. */
const THRESHOLD = 5;

const LEVEL4 =
  '3:remote 4:event 3:util.json 3:util.object 3:util.dbus 3:util.netlink 3:node_device 3:rpc 3:access';
const LEVEL3 = `${LEVEL4} 3:util.threadjob 3:cpu.cpu`;
const LEVEL2 = `${LEVEL3} 3:qemu.qemu_monitor`;
const LEVEL1 = `${LEVEL2} 3:qemu.qemu_monitor_json 3:conf.domain_addr`;

/** The compute container's env entry that turns libvirt's debug logs on, as virt-controller renders it. */
export function libvirtDebugLogsEnv(
  vmi: VirtualMachineInstance,
  launcherVerbosity: number | undefined,
): { name: string; value: string }[] {
  const on = debugLogsRequested(vmi.metadata?.labels) || (launcherVerbosity ?? 0) > THRESHOLD;
  return on ? [{ name: LIBVIRT_DEBUG_LOGS_ENV, value: '1' }] : [];
}

/**
 * The filters for the daemon's `log_filters`, or undefined for none. `custom` comes from
 * `--libvirt-log-filters` (validated at admission and again in the launcher's args).
 */
export function libvirtLogFilters(
  custom: string | undefined,
  verbosity: number,
  debugEnv: boolean,
): string | undefined {
  if (custom) return custom;
  let v = verbosity;
  if (v < THRESHOLD) {
    if (!debugEnv) return undefined;
    v = THRESHOLD + 5;
  }
  // upstream's table: each step above the threshold quiets fewer categories; all others at debug.
  const quieted = [LEVEL1, LEVEL2, LEVEL3][v - THRESHOLD] ?? LEVEL4;
  return `${quieted} 1:*`;
}
