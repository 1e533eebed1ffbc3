/**
 * The qemu guest agent channel: a virtio-serial port on a unix socket whose path libvirt
 * chooses (as upstream does); the agent is then reached through libvirt.
 */
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
        target: { type: 'virtio', name: 'org.qemu.guest_agent.0' },
      },
    ];
  },
};
