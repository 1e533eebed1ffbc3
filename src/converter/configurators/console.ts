/**
 * The serial console on a unix socket and its pty console. The socket's output is also
 * logged to `<socket>-log` (written by virtlogd, beside the socket in the directory the
 * driver creates for it) unless the VMI sets `logSerialConsole: false` or the cluster
 * disables serial console logging and the VMI does not ask for it: upstream's
 * isSerialConsoleLogEnabled and ConsoleDomainConfigurator.
 */
import type { Configurator, Conversion } from '../conversion';

function serialConsoleLogged(c: Conversion): boolean {
  const asked = c.spec.domain.devices.logSerialConsole;
  return asked ?? !c.ctx.serialConsoleLogDisabled;
}

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
        log: serialConsoleLogged(c) ? { file: `${socket}-log`, append: 'on' } : undefined,
      },
    ];
    c.domain.devices.console = [{ type: 'pty', target: { type: 'serial', port: 0 } }];
  },
};
