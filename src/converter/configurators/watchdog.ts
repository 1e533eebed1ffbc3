/** The watchdog: i6300esb on x86, diag288 on s390x, with its expiry action. */
import { type Configurator, type Conversion, userAlias } from '../conversion';
import type { Watchdog } from '../domain/types';

const ACTIONS = ['poweroff', 'reset', 'shutdown', 'dump'];

export const watchdogConfigurator: Configurator = {
  name: 'watchdog',
  configure(c: Conversion) {
    const w = c.spec.domain.devices.watchdog;
    if (!w) return;
    const path = 'spec.domain.devices.watchdog';
    const model = w.i6300esb ? 'i6300esb' : w.diag288 ? 'diag288' : undefined;
    if (!model) c.fail(path, 'needs a watchdog model (i6300esb or diag288)');
    const action = (w.i6300esb ?? w.diag288)?.action || 'reset';
    if (!ACTIONS.includes(action))
      c.fail(
        `${path}.${model}.action`,
        `'${c.line(action, `${path}.${model}.action`)}' is not one of ${ACTIONS.join(', ')}`,
      );
    c.domain.devices.watchdog = [
      { model, action: action as Watchdog['action'], alias: userAlias(c.segment(w.name, `${path}.name`)) },
    ];
  },
};
