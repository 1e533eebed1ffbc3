/**
 * Memory hotplug under the LiveUpdate rollout strategy (upstream's
 * handleMemoryHotplugRequest in pkg/virt-controller/watch/vm): raising the template's
 * `domain.memory.guest` of a running VM up to the VMI's `maxGuest` sets the VMI's guest
 * memory and grows its memory request by as much; the VMI controller then marks it
 * HotMemoryChange, the workload updater migrates it to a launcher pod sized for it, and
 * that node's handler has the virtio-mem device plug the difference. What cannot be done
 * live is a restart, with upstream's reason as RestartRequired's message.
 */
import { formatQuantity, parseQuantity, quantityValue } from '../../../api/config/quantity';
import { liveUpdateMemoryProblem } from '../../../api/defaults/memory-hotplug';
import type { VirtualMachine, VirtualMachineInstance } from '../../../api/generated/types';
import { HOT_MEMORY_CHANGE } from '../../common/hotplug-migration';
import { isMigrating } from '../../common/vmi-migrating';
import type { JsonPatchOp } from '../../runtime/types';
import type { CpuChange } from './cpu-hotplug';

const bytes = (q: unknown) =>
  q === undefined || q === null || !parseQuantity(q as string) ? undefined : quantityValue(q as string);

/**
 * The memory part of bringing the running `vmi` to `wanted` (the VMI the template would
 * start now, defaulted): nothing when the guest memory matches, else a restart, a wait or
 * the patch (same shape as the CPU's).
 */
export function memoryChange(wanted: VirtualMachineInstance, vmi: VirtualMachineInstance): CpuChange {
  const want = bytes(wanted.spec.domain.memory?.guest);
  const have = bytes(vmi.spec.domain.memory?.guest);
  if (want === undefined || have === undefined || want === have) return {};
  const conds = vmi.status?.conditions ?? [];
  const migratable = conds.find((c) => c.type === 'LiveMigratable');
  if (migratable?.status === 'False')
    return {
      restart: 'memory updated in template spec. Memory-hotplug is only available for migratable VMs',
    };
  const maxGuest = vmi.spec.domain.memory?.maxGuest;
  if (maxGuest === undefined)
    return {
      restart: 'memory updated in template spec. Memory-hotplug is not available for this VM configuration',
    };
  const problem = liveUpdateMemoryProblem({ ...wanted.spec, architecture: vmi.spec.architecture }, maxGuest);
  const boot = bytes(vmi.status?.memory?.guestAtBoot) ?? have;
  if (want < boot)
    return { restart: 'memory updated in template spec to a value lower than what the VM started with' };
  if (want > quantityValue(maxGuest))
    return { restart: "memory updated in template spec to a value higher than what's available" };
  if (problem) return { restart: `memory hotplug not supported, ${problem}` };
  if (migratable?.status !== 'True')
    return { wait: "the VMI's LiveMigratable condition is not reported yet" };
  if (conds.some((c) => c.type === HOT_MEMORY_CHANGE && c.status === 'True'))
    return { wait: 'another memory hotplug is in progress' };
  if (isMigrating(vmi)) return { wait: 'memory hotplug is not allowed while VMI is migrating' };
  const guest = formatQuantity(want);
  const patch: JsonPatchOp[] = [
    { op: 'test', path: '/spec/domain/memory/guest', value: vmi.spec.domain.memory?.guest },
    { op: 'replace', path: '/spec/domain/memory/guest', value: guest },
  ];
  // The launcher pod's request (and a limit) grow by what the guest gets, as upstream's.
  for (const kind of ['requests', 'limits'] as const) {
    const old = vmi.spec.domain.resources?.[kind]?.memory;
    const v = bytes(old);
    if (v === undefined) continue;
    const next = kind === 'requests' ? Math.max(v + want - have, want) : v + want - have;
    patch.push(
      { op: 'test', path: `/spec/domain/resources/${kind}/memory`, value: old },
      { op: 'replace', path: `/spec/domain/resources/${kind}/memory`, value: formatQuantity(next) },
    );
  }
  return { patch };
}

/**
 * `wanted` with the memory fields a live update carries taken from the running VMI, for
 * the restart comparison: the guest memory, maxGuest unless the template sets it, and the
 * memory request and limit as the hotplug grew them from the template's.
 */
export function withoutLiveMemory(
  vm: VirtualMachine,
  wanted: VirtualMachineInstance,
  vmi: VirtualMachineInstance,
): VirtualMachineInstance {
  const memory = wanted.spec.domain.memory;
  const live = vmi.spec.domain.memory;
  if (!memory || !live?.maxGuest || live.guest === undefined) return wanted;
  const next = { ...memory, guest: live.guest };
  if (vm.spec.template?.spec?.domain?.memory?.maxGuest === undefined) next.maxGuest = live.maxGuest;
  const grown = (bytes(live.guest) ?? 0) - (bytes(vmi.status?.memory?.guestAtBoot) ?? bytes(live.guest) ?? 0);
  const resources = structuredClone(wanted.spec.domain.resources ?? {});
  for (const kind of ['requests', 'limits'] as const) {
    const r = resources[kind];
    const v = bytes(r?.memory);
    if (r && v !== undefined && grown > 0) {
      const expected = kind === 'requests' ? Math.max(v + grown, bytes(live.guest) ?? 0) : v + grown;
      const have = vmi.spec.domain.resources?.[kind]?.memory;
      if (have !== undefined && expected === bytes(have)) r.memory = have;
    }
  }
  return {
    ...wanted,
    spec: { ...wanted.spec, domain: { ...wanted.spec.domain, memory: next, resources } },
  };
}
