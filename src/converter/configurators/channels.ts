/** The qemu guest agent channel: a virtio-serial port bound to a unix socket. */
import type { Configurator, Conversion } from '../conversion';

export const channelsConfigurator: Configurator = {
  name: 'channels',
  configure(c: Conversion) {
    if (c.spec.domain.devices.downwardMetrics) {
      c.fail(
        'spec.domain.devices.downwardMetrics',
        'the downward metrics device is not supported by this converter yet',
      );
    }
    c.domain.devices.channel = [
      {
        type: 'unix',
        source: {
          mode: 'bind',
          path: `${c.ctx.paths.libvirtRunDir}/qemu/channel/target/domain-${c.domainName}/org.qemu.guest_agent.0`,
        },
        target: { type: 'virtio', name: 'org.qemu.guest_agent.0' },
      },
    ];
  },
};
