/** The sound card (ich9 by default, or ac97). */
import { type Configurator, type Conversion, userAlias } from '../conversion';

export const soundConfigurator: Configurator = {
  name: 'sound',
  configure(c: Conversion) {
    const sound = c.spec.domain.devices.sound;
    if (!sound) return;
    const model = sound.model || 'ich9';
    if (model !== 'ich9' && model !== 'ac97')
      c.fail(
        'spec.domain.devices.sound.model',
        `'${c.line(model, 'spec.domain.devices.sound.model')}' is not one of ich9, ac97`,
      );
    c.domain.devices.sound = [
      { model, alias: userAlias(c.segment(sound.name, 'spec.domain.devices.sound.name')) },
    ];
  },
};
