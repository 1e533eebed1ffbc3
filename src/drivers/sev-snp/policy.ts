/**
 * AMD SEV guest policies as upstream KubeVirt computes them: SEV and SEV-ES always set
 * NoDebug (bit 0), SEV-ES adds EncryptedState (bit 2); SEV-SNP uses the default guest
 * policy 0x30000 (SMT allowed, bit 16; reserved-must-be-one, bit 17).
 */
import type { VirtualMachineInstance } from '../../api';

/** Guest policy bits (AMD SEV API specification). */
export const SevPolicyBits = {
  noDebug: 1 << 0,
  encryptedState: 1 << 2,
  snpSmt: 1 << 16,
  snpReservedMbo: 1 << 17,
} as const;

/** Which confidential mode a VMI asks for, if any. */
export type SevMode = 'sev' | 'sev-es' | 'sev-snp';

/** The mode `spec.domain.launchSecurity` requests (SNP wins only when SEV is absent, as upstream). */
export function sevModeOf(vmi: VirtualMachineInstance): SevMode | undefined {
  const ls = vmi.spec?.domain?.launchSecurity;
  if (ls?.sev) return ls.sev.policy?.encryptedState ? 'sev-es' : 'sev';
  if (ls?.snp) return 'sev-snp';
  return undefined;
}

/** The policy word of `mode`. */
export function sevPolicy(mode: SevMode): number {
  if (mode === 'sev-snp') return SevPolicyBits.snpSmt | SevPolicyBits.snpReservedMbo;
  return SevPolicyBits.noDebug | (mode === 'sev-es' ? SevPolicyBits.encryptedState : 0);
}

/** The policy as libvirt's `<policy>` text, as upstream writes it (`0x` + lowercase hex). */
export function sevPolicyHex(mode: SevMode): string {
  return `0x${sevPolicy(mode).toString(16)}`;
}
