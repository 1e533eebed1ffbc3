/**
 * VSOCK: a virtio socket device with the context id the controller allocated. Always
 * `virtio-non-transitional`, even with useVirtioTransitional: QEMU's vhost-vsock-pci only
 * works as virtio 1.0 (upstream's VSOCKDomainConfigurator forces the same model).
 */
import type { Configurator, Conversion } from '../conversion';

export const vsockConfigurator: Configurator = {
  name: 'vsock',
  configure(c: Conversion) {
    if (!c.spec.domain.devices.autoattachVSOCK) return;
    const cid = c.ctx.vsockCID ?? c.vmi.status?.VSOCKCID;
    if (cid === undefined) {
      c.fail(
        'spec.domain.devices.autoattachVSOCK',
        'VSOCK needs a context id (status.VSOCKCID or the converter context)',
      );
    }
    if (!Number.isInteger(cid) || cid < 3)
      c.fail('status.VSOCKCID', `${cid} is not a valid guest CID (>= 3)`);
    c.domain.devices.vsock = {
      model: 'virtio-non-transitional',
      cid: { auto: 'no', address: cid },
      driver: c.iommu ? { iommu: 'on' } : undefined,
      alias: { name: 'ua-vsock' },
    };
  },
};
