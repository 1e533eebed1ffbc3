/**
 * Confidential guests: SEV, SEV-ES and SEV-SNP `<launchSecurity>`. Policy bits follow
 * upstream: SEV NoDebug (0x1), plus ES (0x4); SNP uses the default guest policy 0x30000
 * (SMT allowed, reserved bit 17). No `<memoryBacking><locked/>`, as upstream's
 * LaunchSecurity configurator: KVM pins an SEV guest's encrypted pages itself (so they are
 * never swapped), and QEMU mlocking all guest memory on top only raises the memlock limit
 * the pod needs (docs/converter.md).
 */
import type { Configurator, Conversion } from '../conversion';

const SEV_NODEBUG = 0x1;
const SEV_ES = 0x4;
const SNP_DEFAULT_POLICY = 0x30000;

// Upstream writes the policy as unpadded hex (`0x1`, `0x5`, `0x30000`).
const hex = (n: number) => `0x${n.toString(16)}`;

export const launchSecurityConfigurator: Configurator = {
  name: 'launchSecurity',
  configure(c: Conversion) {
    if (c.spec.domain.launchSecurity?.tdx) {
      c.fail('spec.domain.launchSecurity.tdx', 'Intel TDX is not supported by this converter yet');
    }
    const mode = c.launchSecurity;
    if (!mode) return;
    const sev = c.ctx.sev;
    const path = 'spec.domain.launchSecurity';
    if (!sev) c.fail(path, 'the host does not support AMD SEV (no SEV parameters in the converter context)');
    if (mode === 'sev-es' && !sev.es)
      c.fail(`${path}.sev.policy.encryptedState`, 'the host does not support SEV-ES');
    if (mode === 'sev-snp' && !sev.snp) c.fail(`${path}.snp`, 'the host does not support SEV-SNP');
    const spec = c.spec.domain.launchSecurity?.sev;
    c.domain.launchSecurity = {
      type: mode === 'sev-snp' ? 'sev-snp' : 'sev',
      cbitpos: sev.cbitpos,
      reducedPhysBits: sev.reducedPhysBits,
      policy:
        mode === 'sev-snp' ? hex(SNP_DEFAULT_POLICY) : hex(SEV_NODEBUG | (mode === 'sev-es' ? SEV_ES : 0)),
      dhCert: spec?.dhCert ? c.line(spec.dhCert, `${path}.sev.dhCert`) : undefined,
      session: spec?.session ? c.line(spec.session, `${path}.sev.session`) : undefined,
    };
  },
};
