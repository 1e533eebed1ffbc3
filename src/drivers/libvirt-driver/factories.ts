/**
 * Registry factories for the libvirt driver: `libvirt` runs guests with KVM and
 * supports a VMI only where KVM is usable; `emulation` is the same driver forced to
 * software emulation (TCG), supported only when the configuration allows emulation.
 * Registered in that order, the registry picks KVM when it works, emulation when it
 * may, and otherwise refuses with both reasons.
 */
import type { DriverFactory, DriverFactoryContext } from '../registry';
import { LibvirtDriver, type LibvirtDriverOptions } from './libvirt-driver';

function optionsFrom(ctx: DriverFactoryContext, name: string, allowKvm: boolean): LibvirtDriverOptions {
  const s = ctx.settings;
  const str = (k: string) => {
    const v = s[k];
    if (v !== undefined && typeof v !== 'string') {
      throw new TypeError(`driver configuration: settings.${name}.${k} must be a string`);
    }
    return v as string | undefined;
  };
  return {
    name,
    uri: str('uri'),
    socketPath: str('socketPath'),
    sysfsRoot: str('sysfsRoot'),
    allowKvm,
    plugins: ctx.plugins,
  };
}

/** KVM through libvirt. Settings: `uri`, `socketPath`, `sysfsRoot`. */
export const libvirtDriverFactory: DriverFactory = {
  name: 'libvirt',
  create: (ctx) => LibvirtDriver.connect(optionsFrom(ctx, 'libvirt', true)),
  supports: (_vmi, caps) => (caps.kvmUsable ? true : 'KVM is not usable on this host'),
};

/** Software emulation (TCG) through libvirt. Settings as `libvirt`. */
export const emulationDriverFactory: DriverFactory = {
  name: 'emulation',
  create: (ctx) => LibvirtDriver.connect(optionsFrom(ctx, 'emulation', false)),
  supports: (_vmi, caps, config) => {
    if (!config.useEmulation) {
      return 'software emulation is not allowed (set developerConfiguration.useEmulation: true)';
    }
    return caps.emulationAvailable ? true : "this host's QEMU cannot emulate the guest architecture";
  },
};
