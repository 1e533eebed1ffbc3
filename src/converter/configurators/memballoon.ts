/**
 * The memory balloon: virtio with statistics and free page reporting, or `none` when the
 * VMI opts out. Free page reporting is off with dedicated CPUs or hugepages (upstream).
 */
import type { Configurator, Conversion } from '../conversion';

export const memballoonConfigurator: Configurator = {
  name: 'memballoon',
  configure(c: Conversion) {
    if (c.spec.domain.devices.autoattachMemBalloon === false) {
      c.domain.devices.memballoon = { model: 'none' };
      return;
    }
    const d = c.spec.domain;
    const fpr =
      c.ctx.freePageReporting && !d.cpu?.dedicatedCpuPlacement && !d.memory?.hugepages && !d.cpu?.realtime;
    c.domain.devices.memballoon = {
      model: c.virtioModel(),
      freePageReporting: fpr ? 'on' : 'off',
      stats: c.ctx.memBalloonStatsPeriod > 0 ? { period: c.ctx.memBalloonStatsPeriod } : undefined,
      driver: c.iommu ? { iommu: 'on' } : undefined,
    };
  },
};
