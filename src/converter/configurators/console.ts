/** The serial console on a unix socket (optionally logged) and its pty console. */
import type { Configurator, Conversion } from '../conversion';

export const consoleConfigurator: Configurator = {
  name: 'console',
  configure(c: Conversion) {
    if (c.spec.domain.devices.autoattachSerialConsole === false) return;
    const socket = `${c.privateDir}/virt-serial0`;
    c.domain.devices.serial = [
      {
        type: 'unix',
        source: { mode: 'bind', path: socket },
        target: { port: 0 },
        log: c.spec.domain.devices.logSerialConsole ? { file: `${socket}-log`, append: 'on' } : undefined,
      },
    ];
    c.domain.devices.console = [{ type: 'pty', target: { type: 'serial', port: 0 } }];
  },
};
