/**
 * VNC on a unix socket plus the video device: the requested type, else vga on x86 (bochs
 * for EFI guests unless the context opts out, as upstream's GraphicsDomainConfigurator)
 * and virtio elsewhere.
 */
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
    if (requested !== undefined) {
      c.domain.devices.video = [{ model: { type: requested, heads: 1, vram: 16384 } }];
    } else if (c.ctx.arch !== 'x86_64') {
      c.domain.devices.video = [{ model: { type: 'virtio', heads: 1 } }];
    } else if (c.ctx.useBochsForEFIGuests && c.spec.domain.firmware?.bootloader?.efi) {
      c.domain.devices.video = [{ model: { type: 'bochs', heads: 1 } }];
    } else {
      c.domain.devices.video = [{ model: { type: 'vga', heads: 1, vram: 16384 } }];
    }
  },
};
