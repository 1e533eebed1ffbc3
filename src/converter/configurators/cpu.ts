/**
 * CPU: mode and model (host-model by default, as upstream, which TCG supports too; named
 * x86 models get mpx disabled, as upstream;
 * host-passthrough becomes `maximum` under software emulation, where it cannot work), topology, features, vCPU count, dedicated-CPU pinning
 * with an isolated emulator thread, and guest NUMA cells mirroring the host's (NUMA
 * passthrough).
 */
import type { Configurator, Conversion } from '../conversion';
import type { CPU, CPUFeature, NUMACell } from '../domain/types';
import { guestMemoryBytes, hugepageKiB } from '../memory-size';

const POLICIES = ['force', 'require', 'optional', 'disable', 'forbid'];

function ranges(ids: number[]): string {
  return ids.join(',');
}

function numaPassthrough(c: Conversion, cpu: CPU, pins: number[]): void {
  const hp = hugepageKiB(c);
  if (hp === undefined)
    c.fail(
      'spec.domain.cpu.numa.guestMappingPassthrough',
      'NUMA passthrough requires hugepages (spec.domain.memory.hugepages)',
    );
  const nodeOf = (pcpu: number) => c.ctx.cpuNUMANodes?.[pcpu] ?? 0;
  const hostNodes = [...new Set(pins.slice(0, c.vcpus).map(nodeOf))].sort((a, b) => a - b);
  const memKiB = Math.floor(guestMemoryBytes(c) / 1024);
  // Split memory evenly across cells in whole hugepages; the last cell takes the rest.
  const pagesTotal = Math.floor(memKiB / hp);
  const perCell = Math.floor(pagesTotal / hostNodes.length);
  const cells: NUMACell[] = hostNodes.map((node, i) => {
    const vcpus = pins.slice(0, c.vcpus).flatMap((p, v) => (nodeOf(p) === node ? [v] : []));
    const pages = i === hostNodes.length - 1 ? pagesTotal - perCell * (hostNodes.length - 1) : perCell;
    return { id: i, cpus: ranges(vcpus), memory: pages * hp, unit: 'KiB' };
  });
  cpu.numa = { cell: cells };
  c.domain.numatune = {
    memory: { mode: 'strict', nodeset: hostNodes.join(',') },
    memnode: hostNodes.map((node, i) => ({ cellid: i, mode: 'strict', nodeset: String(node) })),
  };
  c.domain.memoryBacking ??= {};
  c.domain.memoryBacking.hugepages = {
    page: cells.map((cell) => ({ size: hp, unit: 'KiB', nodeset: String(cell.id) })),
  };
}

export const cpuConfigurator: Configurator = {
  name: 'cpu',
  configure(c: Conversion) {
    const spec = c.spec.domain.cpu ?? {};
    const base = 'spec.domain.cpu';
    for (const k of ['sockets', 'cores', 'threads', 'maxSockets'] as const) {
      const v = spec[k];
      if (v !== undefined && (!Number.isInteger(v) || v < 1))
        c.fail(`${base}.${k}`, 'must be a positive integer');
    }
    const model = spec.model || 'host-model';
    c.line(model, `${base}.model`);
    const emulated = !c.ctx.kvmAvailable;
    const cpu: CPU = {};
    if (model === 'host-model' || model === 'host-passthrough') {
      cpu.mode = emulated && model === 'host-passthrough' ? 'maximum' : model;
    } else {
      if (!/^[A-Za-z0-9._-]+$/.test(model)) c.fail(`${base}.model`, `'${model}' is not a CPU model name`);
      cpu.mode = 'custom';
      cpu.model = { fallback: 'allow', value: model };
    }
    const sockets = spec.sockets || 1;
    const cores = spec.cores || 1;
    const threads = spec.threads || 1;
    const maxSockets = spec.maxSockets && spec.maxSockets > sockets ? spec.maxSockets : sockets;
    cpu.topology = { sockets: maxSockets, cores, threads };
    const features: CPUFeature[] = (spec.features ?? []).map((f, i) => {
      const policy = f.policy || 'require';
      if (!POLICIES.includes(policy))
        c.fail(
          `${base}.features[${i}].policy`,
          `'${c.line(policy, `${base}.features[${i}].policy`)}' is not one of ${POLICIES.join(', ')}`,
        );
      if (!/^[A-Za-z0-9._-]+$/.test(f.name))
        c.fail(
          `${base}.features[${i}].name`,
          `'${c.line(f.name, `${base}.features[${i}].name`)}' is not a CPU feature name`,
        );
      return { policy: policy as CPUFeature['policy'], name: f.name };
    });
    // libvirt refuses a named model whose cpu_map lists the deprecated mpx feature the
    // host CPU lacks (libvirt issues 304 and 608): upstream's CPU configurator disables
    // mpx on every custom x86 model unless the VMI states mpx itself.
    if (cpu.mode === 'custom' && c.ctx.arch === 'x86_64' && !features.some((f) => f.name === 'mpx')) {
      features.push({ policy: 'disable', name: 'mpx' });
    }
    if (features.length) cpu.feature = features;
    const maxVCPUs = maxSockets * cores * threads;
    c.domain.vcpu = { placement: 'static', value: maxVCPUs };
    if (maxVCPUs > c.vcpus) {
      // CPU hotplug headroom, as upstream: the first socket's vCPUs are fixed, the
      // requested ones enabled, the rest present but disabled and hotpluggable.
      const fixed = cores * threads;
      c.domain.vcpus = {
        vcpu: Array.from({ length: maxVCPUs }, (_, id) => ({
          id,
          enabled: id < c.vcpus ? ('yes' as const) : ('no' as const),
          hotpluggable: id >= fixed ? ('yes' as const) : ('no' as const),
        })),
      };
    }
    if (spec.dedicatedCpuPlacement) {
      const needed = c.vcpus + (spec.isolateEmulatorThread ? 1 : 0);
      const pins = c.ctx.cpuSet ?? [];
      if (pins.length < needed) {
        c.fail(
          `${base}.dedicatedCpuPlacement`,
          `needs ${needed} pinned host CPUs in the converter context (cpuSet), got ${pins.length}`,
        );
      }
      c.domain.cputune = { vcpupin: pins.slice(0, c.vcpus).map((p, v) => ({ vcpu: v, cpuset: String(p) })) };
      if (spec.isolateEmulatorThread) c.domain.cputune.emulatorpin = { cpuset: String(pins[c.vcpus]) };
      if (spec.numa?.guestMappingPassthrough) numaPassthrough(c, cpu, pins);
      if (spec.realtime) {
        // Real-time vCPUs run under SCHED_FIFO (upstream: priority 1, all vCPUs unless a mask is given).
        const mask = spec.realtime.mask;
        if (mask !== undefined && !/^\^?[0-9]+(-[0-9]+)?(,\^?[0-9]+(-[0-9]+)?)*$/.test(mask)) {
          c.fail(
            `${base}.realtime.mask`,
            `'${c.line(mask, `${base}.realtime.mask`)}' is not a CPU list such as 0-3,^2`,
          );
        }
        c.domain.cputune.vcpusched = [{ vcpus: mask || `0-${c.vcpus - 1}`, scheduler: 'fifo', priority: 1 }];
      }
    } else if (spec.realtime) {
      c.fail(`${base}.realtime`, 'requires dedicatedCpuPlacement');
    } else if (spec.isolateEmulatorThread) {
      c.fail(`${base}.isolateEmulatorThread`, 'requires dedicatedCpuPlacement');
    } else if (spec.numa?.guestMappingPassthrough) {
      c.fail(`${base}.numa.guestMappingPassthrough`, 'requires dedicatedCpuPlacement');
    }
    c.domain.cpu = cpu;
  },
};
