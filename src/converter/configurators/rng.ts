/** The virtio RNG, fed from the host's /dev/urandom. */
import type { Configurator, Conversion } from '../conversion';

export const rngConfigurator: Configurator = {
  name: 'rng',
  configure(c: Conversion) {
    if (!c.spec.domain.devices.rng) return;
    c.domain.devices.rng = [
      {
        model: c.virtioModel(),
        backend: { model: 'random', value: '/dev/urandom' },
        driver: c.iommu ? { iommu: 'on' } : undefined,
      },
    ];
  },
};
