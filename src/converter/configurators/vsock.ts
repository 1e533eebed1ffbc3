/** VSOCK: a virtio socket device with the context id the controller allocated. */
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
      model: c.virtioModel(),
      cid: { auto: 'no', address: cid },
      driver: c.iommu ? { iommu: 'on' } : undefined,
      alias: { name: 'ua-vsock' },
    };
  },
};
