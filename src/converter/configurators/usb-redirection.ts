/** USB redirection from the client (`clientPassthrough`): four usbredir ports on unix sockets. */
import type { Configurator, Conversion } from '../conversion';

/** How many redirection slots upstream offers. */
export const USB_REDIR_PORTS = 4;

export const usbRedirectionConfigurator: Configurator = {
  name: 'usbRedirection',
  configure(c: Conversion) {
    if (!c.spec.domain.devices.clientPassthrough) return;
    c.domain.devices.redirdev = Array.from({ length: USB_REDIR_PORTS }, (_, i) => ({
      bus: 'usb' as const,
      type: 'unix' as const,
      source: { mode: 'bind' as const, path: `${c.privateDir}/virt-usbredir-${i}` },
    }));
  },
};
