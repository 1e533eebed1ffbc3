/**
 * The launcher's log verbosity travels as upstream's: virt-controller puts the VMI's
 * `logVerbosity` label, else the KubeVirt resource's `logVerbosity.virtLauncher`, in the
 * compute container's `VIRT_LAUNCHER_LOG_VERBOSITY`; the launcher reads it at start (default 2).
 */
import type { ClusterConfig } from '../../api/config/cluster-config';
import type { VirtualMachineInstance } from '../../api/generated/types';
import { LOG_VERBOSITY_LABEL, logVerbosityProblem } from '../../api/launcher-log-labels';
import { configuredVerbosity } from './component-log';

/** upstream's ENV_VAR_VIRT_LAUNCHER_LOG_VERBOSITY. */
export const LAUNCHER_VERBOSITY_ENV = 'VIRT_LAUNCHER_LOG_VERBOSITY';

/**
 * The verbosity virt-controller gives a VMI's launcher: its `logVerbosity` label (checked at
 * admission; a value that is not one is passed over here), else the resource's, else none.
 */
export function vmiLauncherVerbosity(
  config: ClusterConfig,
  vmi?: VirtualMachineInstance,
): number | undefined {
  const label = vmi?.metadata?.labels?.[LOG_VERBOSITY_LABEL];
  if (label !== undefined && !logVerbosityProblem(label)) return Number(label);
  return configuredVerbosity(config.configuration, 'virt-launcher');
}

/** The compute container's env entry, when the VMI's label or the resource sets the launcher's verbosity. */
export function launcherVerbosityEnv(
  config: ClusterConfig,
  vmi?: VirtualMachineInstance,
): { name: string; value: string }[] {
  const v = vmiLauncherVerbosity(config, vmi);
  return v === undefined ? [] : [{ name: LAUNCHER_VERBOSITY_ENV, value: String(v) }];
}

/** The launcher's verbosity from its environment: the value, or 2 with the problem when it is not one. */
export function launcherVerbosity(env: NodeJS.ProcessEnv): { v: number; problem?: string } {
  const raw = env[LAUNCHER_VERBOSITY_ENV];
  if (raw === undefined || raw === '') return { v: 2 };
  if (!/^\d{1,3}$/.test(raw))
    return { v: 2, problem: `${LAUNCHER_VERBOSITY_ENV}=${JSON.stringify(raw)} is not a verbosity; using 2` };
  return { v: Number(raw) };
}
