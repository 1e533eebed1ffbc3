/**
 * CPU hotplug under the LiveUpdate rollout strategy (upstream's handleCPUChangeRequest
 * and VMICPUsPatch in pkg/virt-controller/watch/vm): raising the template's
 * `domain.cpu.sockets` of a running VM up to the VMI's `maxSockets` sets the VMI's
 * sockets; the VMI controller then marks it HotVCPUChange, the workload updater migrates
 * it to a launcher pod sized for the new vCPUs, and that node's handler enables them.
 * What cannot be done live (past maxSockets, fewer sockets, arm64, a VMI that cannot
 * migrate) is a restart, with the reason as RestartRequired's message.
 *
 * Deviation from upstream: an explicit `resources.requests.cpu` / `limits.cpu` is kept as
 * written (upstream adds the new vCPUs' share to it); the computed request of the launcher
 * pod (vCPUs / cpuAllocationRatio) follows the sockets either way.
 */
import type { VirtualMachine, VirtualMachineInstance } from '../../../api/generated/types';
import { HOT_VCPU_CHANGE } from '../../common/hotplug-migration';
import { isMigrating } from '../../common/vmi-migrating';
import type { JsonPatchOp } from '../../runtime/types';

/** What a change of the template's sockets means for the running VMI. */
export interface CpuChange {
  /** It needs a restart, for this reason. */
  restart?: string;
  /** It cannot be applied yet (and is looked at again), for this reason. */
  wait?: string;
  /** The JSON patch that applies it to the VMI. */
  patch?: JsonPatchOp[];
}

/**
 * The CPU part of bringing the running `vmi` to `wanted` (the VMI the template would start
 * now, defaulted): nothing when the sockets match, else a restart, a wait or the patch.
 */
export function cpuChange(wanted: VirtualMachineInstance, vmi: VirtualMachineInstance): CpuChange {
  const want = wanted.spec.domain.cpu?.sockets ?? 1;
  const cpu = vmi.spec.domain.cpu;
  const have = cpu?.sockets ?? 1;
  if (want === have) return {};
  // What cannot go live first (upstream looks at a hotplug in progress first; a restart
  // reason is the more useful answer either way).
  if (!cpu?.maxSockets || want > cpu.maxSockets)
    return { restart: "CPU sockets updated in template spec to a value higher than what's available" };
  if (want < have) return { restart: 'Reduction of CPU socket count requires a restart' };
  if (vmi.spec.architecture === 'arm64') return { restart: "ARM doesn't support CPU hotplug" };
  const conds = vmi.status?.conditions ?? [];
  const migratable = conds.find((c) => c.type === 'LiveMigratable');
  if (migratable?.status === 'False') {
    return {
      restart: `CPU hotplug needs a live migration and the VMI is not live-migratable: ${migratable.message ?? migratable.reason ?? ''}`,
    };
  }
  // The hotplug is a migration: not before virt-handler said whether the VMI can do one.
  if (migratable?.status !== 'True')
    return { wait: "the VMI's LiveMigratable condition is not reported yet" };
  if (conds.some((c) => c.type === HOT_VCPU_CHANGE && c.status === 'True'))
    return { wait: 'another CPU hotplug is in progress' };
  if (isMigrating(vmi)) return { wait: 'CPU hotplug is not allowed while VMI is migrating' };
  const patch: JsonPatchOp[] =
    cpu.sockets === undefined
      ? [{ op: 'add', path: '/spec/domain/cpu/sockets', value: want }]
      : [
          { op: 'test', path: '/spec/domain/cpu/sockets', value: have },
          { op: 'replace', path: '/spec/domain/cpu/sockets', value: want },
        ];
  return { patch };
}

/**
 * `wanted` with the CPU fields a live update carries (or refuses with its own reason)
 * taken from the running VMI, for the comparison that decides a restart: the sockets,
 * and maxSockets unless the template sets it (else it was defaulted from the sockets).
 */
export function withoutLiveCpu(
  vm: VirtualMachine,
  wanted: VirtualMachineInstance,
  vmi: VirtualMachineInstance,
): VirtualMachineInstance {
  const cpu = wanted.spec.domain.cpu;
  const live = vmi.spec.domain.cpu;
  if (!cpu || !live) return wanted;
  const next = { ...cpu, sockets: live.sockets };
  if (vm.spec.template?.spec?.domain?.cpu?.maxSockets === undefined) next.maxSockets = live.maxSockets;
  if (next.sockets === undefined) delete next.sockets;
  if (next.maxSockets === undefined) delete next.maxSockets;
  return { ...wanted, spec: { ...wanted.spec, domain: { ...wanted.spec.domain, cpu: next } } };
}
