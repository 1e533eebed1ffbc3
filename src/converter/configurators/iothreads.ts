/**
 * IO threads, counted as upstream's GetIOThreadsCountType: every disk without a dedicated
 * IO thread shares a pool (one thread under `shared` or no policy; under `auto` up to
 * twice the pod's CPU request, or one thread when the emulator thread is isolated), and
 * each dedicated-IO-thread disk adds one. `supplementalPool` creates the requested pool
 * and spreads disks over it (libvirt 9 has no per-queue mapping, so each disk takes one
 * pool thread, round-robin). A SCSI controller gets a thread only when a SCSI disk asks
 * for a dedicated one (upstream's shouldConfigSCSIThread). Pinning follows upstream's
 * FormatDomainIOThreadPin for dedicated CPUs.
 */
import { quantityValue } from '../../api/config/quantity';
import type { VirtualMachineInstanceSpec } from '../../api/generated/types';
import type { Configurator, Conversion } from '../conversion';

/** Upstream's getThreadPoolLimit: the most threads the shared pool may have. */
function threadPoolLimit(spec: VirtualMachineInstanceSpec): number {
  if (spec.domain.ioThreadsPolicy !== 'auto') return 1;
  const cpu = spec.domain.cpu;
  if (cpu?.dedicatedCpuPlacement && cpu.isolateEmulatorThread) return 1;
  // The pod's CPU request (rounded up, as Quantity.Value()), else its limit, else one CPU.
  const res = spec.domain.resources;
  const q = res?.requests?.cpu ?? res?.limits?.cpu;
  const cpus = q === undefined ? 1 : quantityValue(q);
  return cpus * 2;
}

/** Upstream's balanced pinning of IO threads over the vCPUs' host CPUs. */
function pinOverVCPUs(threads: number, pins: number[]): string[] {
  const vcpus = pins.length;
  if (threads >= vcpus) {
    return Array.from({ length: threads }, (_, i) => String(pins[(i + 1) % vcpus]));
  }
  // e.g. 3 threads over 8 CPUs: 0,1,2 / 3,4,5 / 6,7
  const out: string[] = [];
  const longer = vcpus % threads;
  let start = 0;
  for (let t = 1; t <= threads; t++) {
    const size = Math.floor(vcpus / threads) + (t <= longer ? 1 : 0);
    out.push(pins.slice(start, start + size).join(','));
    start += size;
  }
  return out;
}

export const iothreadsConfigurator: Configurator = {
  name: 'iothreads',
  configure(c: Conversion) {
    const policy = c.spec.domain.ioThreadsPolicy;
    const specDisks = c.spec.domain.devices.disks ?? [];
    const dedicatedCount = specDisks.filter((d) => d.dedicatedIOThread).length;
    if (policy === undefined && dedicatedCount === 0) return;
    const byAlias = new Map(specDisks.map((d) => [`ua-${d.name}`, d]));
    const virtio = (c.domain.devices.disk ?? []).filter((d) => d.target.bus === 'virtio');
    const dedicated = virtio.filter((d) => byAlias.get(d.alias!.name)?.dedicatedIOThread);
    const shared = virtio.filter((d) => !byAlias.get(d.alias!.name)?.dedicatedIOThread);
    let pool: number;
    let total: number;
    if (policy === undefined || policy === 'shared' || policy === 'auto') {
      pool = specDisks.length - dedicatedCount;
      const limit = threadPoolLimit(c.spec);
      if (pool + dedicatedCount > limit) pool = Math.max(1, limit - dedicatedCount);
      total = pool + dedicatedCount;
    } else if (policy === 'supplementalPool') {
      const n = c.spec.domain.ioThreads?.supplementalPoolThreadCount;
      if (n === undefined || !Number.isInteger(n) || n < 1) {
        c.fail(
          'spec.domain.ioThreads.supplementalPoolThreadCount',
          'must be a positive integer with ioThreadsPolicy supplementalPool',
        );
      }
      pool = n;
      total = n + dedicated.length;
    } else {
      c.fail(
        'spec.domain.ioThreadsPolicy',
        `'${c.line(policy, 'spec.domain.ioThreadsPolicy')}' is not one of shared, auto, supplementalPool`,
      );
    }
    if (total === 0) return;
    shared.forEach((d, i) => {
      d.driver!.iothread = (i % pool) + 1;
    });
    dedicated.forEach((d, i) => {
      d.driver!.iothread = pool + i + 1;
    });
    c.domain.iothreads = total;
    // The controller takes the pool thread after the shared virtio disks' and one queue
    // per vCPU, only when a SCSI disk asks for a dedicated thread.
    const scsi = c.domain.devices.controller?.find((ctl) => ctl.type === 'scsi');
    const scsiDedicated = specDisks.some(
      (d) => d.dedicatedIOThread && (d.disk?.bus ?? d.lun?.bus ?? d.cdrom?.bus) === 'scsi',
    );
    if (scsi && scsiDedicated && pool > 0) {
      scsi.driver = { ...scsi.driver, queues: c.vcpus, iothread: (shared.length % pool) + 1 };
    }
    const cpu = c.spec.domain.cpu;
    const tune = c.domain.cputune;
    if (!cpu?.dedicatedCpuPlacement || !tune) return;
    const emulator = tune.emulatorpin?.cpuset;
    if (emulator !== undefined) {
      // Upstream pins only the first IO thread next to the isolated emulator thread; the
      // others run wherever the pod's cpuset lets them.
      tune.iothreadpin = [{ iothread: 1, cpuset: emulator }];
    } else {
      const pins = tune.vcpupin?.map((p) => Number(p.cpuset)) ?? [];
      if (pins.length === 0) return;
      tune.iothreadpin = pinOverVCPUs(total, pins).map((cpuset, i) => ({ iothread: i + 1, cpuset }));
    }
  },
};
