/** What a guest reboot does: restart (default) or, with `rebootPolicy: Terminate`, stop the VMI. */
import type { Configurator, Conversion } from '../conversion';

export const rebootPolicyConfigurator: Configurator = {
  name: 'rebootPolicy',
  configure(c: Conversion) {
    const p = c.spec.domain.rebootPolicy;
    if (p !== undefined && p !== 'Reboot' && p !== 'Terminate') {
      c.fail(
        'spec.domain.rebootPolicy',
        `'${c.line(p, 'spec.domain.rebootPolicy')}' is not one of Reboot, Terminate`,
      );
    }
    c.domain.on_reboot = p === 'Terminate' ? 'destroy' : 'restart';
  },
};
