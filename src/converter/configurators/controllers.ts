/**
 * Controllers: USB (qemu-xhci when anything uses USB, otherwise `none` so QEMU adds no
 * default one), virtio-serial for the agent channel, and virtio-scsi when a disk uses
 * SCSI or hotplug is enabled.
 */
import type { Configurator, Conversion } from '../conversion';
import type { Controller } from '../domain/types';

export const controllersConfigurator: Configurator = {
  name: 'controllers',
  configure(c: Conversion) {
    const dev = c.domain.devices;
    const usesUSB =
      (dev.input ?? []).some((i) => i.bus === 'usb') ||
      (dev.redirdev ?? []).length > 0 ||
      (dev.hostdev ?? []).some((h) => h.type === 'usb') ||
      (dev.disk ?? []).some((d) => d.target.bus === 'usb');
    const iommu = c.iommu ? { iommu: 'on' as const } : undefined;
    const controllers: Controller[] = [
      usesUSB
        ? { type: 'usb', index: 0, model: 'qemu-xhci', driver: iommu }
        : { type: 'usb', index: 0, model: 'none' },
      { type: 'virtio-serial', index: 0, model: c.virtioModel(), driver: iommu },
    ];
    const usesSCSI = (dev.disk ?? []).some((d) => d.target.bus === 'scsi');
    if (usesSCSI || !c.spec.domain.devices.disableHotplug) {
      controllers.push({ type: 'scsi', index: 0, model: c.virtioModel(), driver: iommu });
    }
    dev.controller = controllers;
  },
};
