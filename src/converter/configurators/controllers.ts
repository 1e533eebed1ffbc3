/**
 * Controllers, in upstream's order: USB (qemu-xhci when anything uses USB, otherwise
 * `none` so QEMU adds no default one), virtio-scsi when a disk uses SCSI or hotplug is
 * enabled, and virtio-serial with the serial console.
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
      usesUSB ? { type: 'usb', index: 0, model: 'qemu-xhci' } : { type: 'usb', index: 0, model: 'none' },
    ];
    const usesSCSI = (dev.disk ?? []).some((d) => d.target.bus === 'scsi');
    if (usesSCSI || !c.spec.domain.devices.disableHotplug) {
      controllers.push({ type: 'scsi', index: 0, model: c.virtioModel(), driver: iommu });
    }
    // Upstream ties the virtio-serial controller to the serial console; libvirt adds one
    // for the agent channel by itself when needed.
    if (c.spec.domain.devices.autoattachSerialConsole !== false) {
      controllers.push({ type: 'virtio-serial', index: 0, model: c.virtioModel(), driver: iommu });
    }
    dev.controller = controllers;
  },
};
