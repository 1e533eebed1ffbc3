/**
 * IO threads: `shared` puts every virtio disk on one thread (dedicated-IO-thread disks
 * get their own), `auto` spreads disks over up to twice the vCPU count, and
 * `supplementalPool` creates the requested pool and spreads disks over it (libvirt 9
 * has no per-queue mapping, so each disk takes one pool thread, round-robin). Threads
 * are pinned to the emulator CPU when it is isolated.
 */
import type { Configurator, Conversion } from '../conversion';

export const iothreadsConfigurator: Configurator = {
  name: 'iothreads',
  configure(c: Conversion) {
    const disks = (c.domain.devices.disk ?? []).filter((d) => d.target.bus === 'virtio');
    const policy = c.spec.domain.ioThreadsPolicy;
    const specDisks = new Map((c.spec.domain.devices.disks ?? []).map((d) => [`ua-${d.name}`, d]));
    const dedicated = disks.filter((d) => specDisks.get(d.alias!.name)?.dedicatedIOThread);
    const sharedDisks = disks.filter((d) => !specDisks.get(d.alias!.name)?.dedicatedIOThread);
    if (policy === undefined && dedicated.length === 0) return;
    // SCSI disks are served by the controller, which takes a pool thread too.
    const scsiDisks = (c.domain.devices.disk ?? []).some((d) => d.target.bus === 'scsi');
    const users = sharedDisks.length + (scsiDisks && policy !== undefined ? 1 : 0);
    let pool = 0;
    if (policy === undefined || policy === 'shared') {
      pool = users > 0 ? 1 : 0;
    } else if (policy === 'auto') {
      pool = Math.min(users, 2 * c.vcpus);
    } else if (policy === 'supplementalPool') {
      const n = c.spec.domain.ioThreads?.supplementalPoolThreadCount;
      if (n === undefined || !Number.isInteger(n) || n < 1) {
        c.fail(
          'spec.domain.ioThreads.supplementalPoolThreadCount',
          'must be a positive integer with ioThreadsPolicy supplementalPool',
        );
      }
      pool = n;
    } else {
      c.fail(
        'spec.domain.ioThreadsPolicy',
        `'${c.line(policy, 'spec.domain.ioThreadsPolicy')}' is not one of shared, auto, supplementalPool`,
      );
    }
    sharedDisks.forEach((d, i) => {
      d.driver!.iothread = (i % pool) + 1;
    });
    dedicated.forEach((d, i) => {
      d.driver!.iothread = pool + i + 1;
    });
    const total = pool + dedicated.length;
    if (total === 0) return;
    c.domain.iothreads = total;
    // A SCSI controller serving SCSI disks gets one queue per vCPU on the first IO thread
    // (upstream spreads queues over several threads, which libvirt 9 cannot express).
    const scsi = c.domain.devices.controller?.find((ctl) => ctl.type === 'scsi');
    if (scsi && policy !== undefined && scsiDisks && pool > 0) {
      scsi.driver = { ...scsi.driver, queues: c.vcpus, iothread: 1 };
    }
    const emulator = c.domain.cputune?.emulatorpin?.cpuset;
    if (emulator !== undefined) {
      c.domain.cputune!.iothreadpin = Array.from({ length: total }, (_, i) => ({
        iothread: i + 1,
        cpuset: emulator,
      }));
    }
  },
};
