/** Domain name (`<namespace>_<name>`), UUID and the kubevirt metadata element. */
import type { Configurator, Conversion } from '../conversion';

const UUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

export const metadataConfigurator: Configurator = {
  name: 'metadata',
  configure(c: Conversion) {
    c.domain.name = c.domainName;
    const uuid = c.spec.domain.firmware?.uuid;
    if (uuid !== undefined) {
      if (!UUID.test(uuid))
        c.fail('spec.domain.firmware.uuid', `'${c.line(uuid, 'spec.domain.firmware.uuid')}' is not a UUID`);
      c.domain.uuid = uuid.toLowerCase();
    }
    const grace = c.spec.terminationGracePeriodSeconds;
    c.domain.metadata = {
      kubevirt: {
        xmlns: 'http://kubevirt.io',
        uid: c.vmi.metadata?.uid ? c.line(c.vmi.metadata.uid, 'metadata.uid') : undefined,
        graceperiod: grace === undefined ? undefined : { deletionGracePeriodSeconds: grace },
      },
    };
  },
};
