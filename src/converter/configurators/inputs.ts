/** Input devices: tablets on the usb or virtio bus. */
import { type Configurator, type Conversion, userAlias } from '../conversion';

export const inputsConfigurator: Configurator = {
  name: 'inputs',
  configure(c: Conversion) {
    // Upstream adds a USB tablet when asked to auto-attach one and the VMI lists none.
    if (c.spec.domain.devices.autoattachInputDevice && !c.spec.domain.devices.inputs?.length) {
      c.domain.devices.input = [{ type: 'tablet', bus: 'usb', alias: userAlias('default-0') }];
    }
    (c.spec.domain.devices.inputs ?? []).forEach((input, i) => {
      const path = `spec.domain.devices.inputs[${i}]`;
      c.segment(input.name, `${path}.name`);
      if (input.type !== 'tablet')
        c.fail(
          `${path}.type`,
          `'${c.line(String(input.type), `${path}.type`)}' is not supported; only tablet`,
        );
      const bus = input.bus || 'usb';
      if (bus !== 'usb' && bus !== 'virtio')
        c.fail(`${path}.bus`, `'${c.line(bus, `${path}.bus`)}' is not one of usb, virtio`);
      c.domain.devices.input ??= [];
      c.domain.devices.input.push({
        type: 'tablet',
        bus,
        alias: userAlias(input.name),
      });
    });
  },
};
