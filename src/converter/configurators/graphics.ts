/** VNC on a unix socket plus the video device (vga on x86, virtio elsewhere or when asked). */
import type { Configurator, Conversion } from '../conversion';

const VIDEO_TYPES = ['vga', 'cirrus', 'virtio', 'ramfb', 'bochs'];

export const graphicsConfigurator: Configurator = {
  name: 'graphics',
  configure(c: Conversion) {
    if (c.spec.domain.devices.autoattachGraphicsDevice === false) return;
    c.domain.devices.graphics = [
      { type: 'vnc', listen: [{ type: 'socket', socket: `${c.privateDir}/virt-vnc` }] },
    ];
    const requested = c.spec.domain.devices.video?.type;
    if (requested !== undefined && !VIDEO_TYPES.includes(requested)) {
      c.fail(
        'spec.domain.devices.video.type',
        `'${c.line(requested, 'spec.domain.devices.video.type')}' is not one of ${VIDEO_TYPES.join(', ')}`,
      );
    }
    const type = requested ?? (c.ctx.arch === 'x86_64' ? 'vga' : 'virtio');
    c.domain.devices.video = [
      { model: type === 'vga' ? { type, heads: 1, vram: 16384 } : { type, heads: 1 } },
    ];
  },
};
