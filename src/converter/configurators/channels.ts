/**
 * Channels: the qemu guest agent's virtio-serial port on a unix socket whose path libvirt
 * chooses (as upstream does; the agent is then reached through libvirt), and, with
 * `devices.downwardMetrics`, upstream's vhostmd port `org.github.vhostmd.1` bound to
 * `<privateDir>/downwardmetrics-channel/downwardmetrics.sock` (convertDownwardMetricsChannel).
 * Only the guest side exists so far: nothing answers the guest's metrics requests on that
 * socket yet (docs/converter.md).
 */
import type { Configurator, Conversion } from '../conversion';
import type { Channel } from '../domain/types';

/** The virtio-serial port name vhostmd clients in the guest open. */
export const DOWNWARD_METRICS_PORT = 'org.github.vhostmd.1';

export const channelsConfigurator: Configurator = {
  name: 'channels',
  configure(c: Conversion) {
    const channels: Channel[] = [
      { type: 'unix', target: { type: 'virtio', name: 'org.qemu.guest_agent.0' } },
    ];
    if (c.spec.domain.devices.downwardMetrics) {
      channels.push({
        type: 'unix',
        source: {
          mode: 'bind',
          path: `${c.ctx.paths.privateDir}/downwardmetrics-channel/downwardmetrics.sock`,
        },
        target: { type: 'virtio', name: DOWNWARD_METRICS_PORT },
      });
    }
    c.domain.devices.channel = channels;
  },
};
