/** Domain type: `kvm` when KVM is usable, `qemu` (TCG) when emulation is allowed, else an error. */
import type { Configurator, Conversion } from '../conversion';

export const hypervisorConfigurator: Configurator = {
  name: 'hypervisor',
  configure(c: Conversion) {
    if (c.ctx.kvmAvailable) c.domain.type = 'kvm';
    else if (c.ctx.allowEmulation) c.domain.type = 'qemu';
    else {
      c.fail(
        'spec',
        'KVM is not usable on this host and software emulation is not allowed; enable developerConfiguration.useEmulation (or pass --emulation) to run under TCG',
      );
    }
    if (c.ctx.emulator) c.domain.devices.emulator = c.ctx.emulator;
  },
};
