/**
 * The vTPM: an swtpm-emulated TPM 2.0 (tpm-tis); a persistent one keeps its state and uses
 * tpm-crb, as upstream introduced the two together.
 */
import type { Configurator, Conversion } from '../conversion';

export const tpmConfigurator: Configurator = {
  name: 'tpm',
  configure(c: Conversion) {
    const tpm = c.spec.domain.devices.tpm;
    if (!tpm || tpm.enabled === false) return;
    c.domain.devices.tpm = [
      {
        model: tpm.persistent ? 'tpm-crb' : 'tpm-tis',
        backend: { type: 'emulator', version: '2.0', persistent_state: tpm.persistent ? 'yes' : undefined },
        alias: { name: 'ua-tpm' },
      },
    ];
  },
};
