/**
 * The SEV-SNP plugin: confidential guests on AMD hosts. It labels nodes
 * (`kubevirt.io/sev`, `kubevirt.io/sev-es`, `kubevirt.io/sev-snp`) and advertises
 * capacity (`devices.kubevirt.io/sev`) from the probed capabilities, rejects VMIs
 * upstream rejects, and makes the converted domain confidential: `<launchSecurity>`
 * with upstream's policy, firmware that supports it, `iommu="on"` on every virtio
 * device (the device must go through the encrypted-memory-aware IOMMU path), locked
 * memory. Its launcher operations are the attestation flow (see `attestation.ts`).
 */
import type { VirtualMachineInstance } from '../../api';
import { DeviceResources, Labels } from '../../api';
import type { Domain } from '../../converter';
import type { HostCapabilities } from '../driver';
import { DriverError } from '../errors';
import type { AdmissionCause, HypervisorPlugin } from '../plugin';
import { sevLauncherOperations } from './attestation';
import { type SevMode, sevModeOf, sevPolicyHex } from './policy';

/** Firmware images for confidential guests. */
export interface SevFirmware {
  /** OVMF code for SEV and SEV-ES (pflash, read-only); Debian's 4M build by default. */
  sevCode: string;
  /** NVRAM template for SEV and SEV-ES. */
  sevVars: string;
  /** OVMF for SEV-SNP, loaded as a stateless ROM (SNP cannot use pflash NVRAM). */
  snpCode: string;
}

/** Debian 12's `ovmf` package. It ships no AMD-SEV-specific build, so SNP uses the generic OVMF.fd. */
export const debianSevFirmware: SevFirmware = {
  sevCode: '/usr/share/OVMF/OVMF_CODE_4M.fd',
  sevVars: '/usr/share/OVMF/OVMF_VARS_4M.fd',
  snpCode: '/usr/share/ovmf/OVMF.fd',
};

/** Options of `sevSnpPlugin`. */
export interface SevSnpPluginOptions {
  firmware?: Partial<SevFirmware>;
}

const VIRTIO_MODELS = /^virtio(-non-transitional|-transitional)?$/;

/** Sets `iommu="on"` on every virtio device of `domain`. */
export function enableVirtioIommu(domain: Domain): void {
  const d = domain.devices;
  for (const disk of d.disk ?? []) {
    if (disk.target.bus === 'virtio') disk.driver = { name: 'qemu', ...disk.driver, iommu: 'on' };
  }
  for (const nic of d.interface ?? []) {
    if (nic.model && VIRTIO_MODELS.test(nic.model.type)) nic.driver = { ...nic.driver, iommu: 'on' };
  }
  for (const c of d.controller ?? []) {
    if (c.type === 'virtio-serial' || (c.type === 'scsi' && c.model && /^virtio/.test(c.model))) {
      c.driver = { ...c.driver, iommu: 'on' };
    }
  }
  if (d.memballoon && d.memballoon.model !== 'none')
    d.memballoon.driver = { ...d.memballoon.driver, iommu: 'on' };
  for (const r of d.rng ?? []) r.driver = { ...r.driver, iommu: 'on' };
  if (d.vsock) d.vsock.driver = { ...d.vsock.driver, iommu: 'on' };
  for (const f of d.filesystem ?? []) {
    if (f.driver?.type === 'virtiofs') f.driver = { ...f.driver, iommu: 'on' };
  }
}

/** Admission rules for confidential VMIs (upstream's webhook checks). */
export function sevAdmission(vmi: VirtualMachineInstance): AdmissionCause[] {
  const out: AdmissionCause[] = [];
  const ls = vmi.spec?.domain?.launchSecurity;
  if (!ls?.sev && !ls?.snp) return out;
  if (ls.sev && ls.snp) {
    out.push({
      field: 'spec.domain.launchSecurity',
      message: 'sev and snp are mutually exclusive: set one of them',
    });
  }
  const efi = vmi.spec?.domain?.firmware?.bootloader?.efi;
  if (!efi) {
    out.push({
      field: 'spec.domain.firmware.bootloader.efi',
      message: 'SEV requires OVMF (UEFI): set spec.domain.firmware.bootloader.efi with secureBoot: false',
    });
  } else if (efi.secureBoot !== false) {
    out.push({
      field: 'spec.domain.firmware.bootloader.efi.secureBoot',
      message: 'SEV does not work along with SecureBoot: set secureBoot: false',
    });
  }
  if (ls.sev?.attestation && vmi.spec?.startStrategy !== 'Paused') {
    out.push({
      field: 'spec.startStrategy',
      message: 'SEV attestation requires the VMI to start paused: set spec.startStrategy: Paused',
    });
  }
  for (const [field, value] of [
    ['spec.domain.launchSecurity.sev.dhCert', ls.sev?.dhCert],
    ['spec.domain.launchSecurity.sev.session', ls.sev?.session],
  ] as const) {
    if (value !== undefined && !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) {
      out.push({ field, message: 'must be base64' });
    }
  }
  return out;
}

function requireSupport(mode: SevMode, caps: HostCapabilities, vmi: VirtualMachineInstance): void {
  const sev = caps.sev;
  const who = `VirtualMachineInstance ${vmi.metadata?.namespace ?? 'default'}/${vmi.metadata?.name ?? '?'}`;
  const missing =
    mode === 'sev-snp'
      ? !sev?.sevSnp && ['spec.domain.launchSecurity.snp', 'SEV-SNP']
      : mode === 'sev-es'
        ? !sev?.sevEs && ['spec.domain.launchSecurity.sev.policy.encryptedState', 'SEV-ES']
        : !sev?.sev && ['spec.domain.launchSecurity.sev', 'SEV'];
  if (missing) {
    throw new DriverError(
      'Unsupported',
      `${who}: ${missing[0]}: this host does not support ${missing[1]} (libvirt's domain capabilities and the kvm_amd module parameters must both enable it); schedule it on a node labelled ${mode === 'sev-snp' ? Labels.sevSNP : mode === 'sev-es' ? Labels.sevES : Labels.sev}=true`,
    );
  }
}

/** Makes `domain` a confidential guest of `mode` on a host with `caps`. */
export function applySev(
  domain: Domain,
  vmi: VirtualMachineInstance,
  mode: SevMode,
  caps: HostCapabilities,
  firmware: SevFirmware,
): void {
  requireSupport(mode, caps, vmi);
  const spec = vmi.spec?.domain?.launchSecurity?.sev;
  domain.launchSecurity = {
    type: mode === 'sev-snp' ? 'sev-snp' : 'sev',
    cbitpos: caps.sev?.cbitpos,
    reducedPhysBits: caps.sev?.reducedPhysBits,
    policy: sevPolicyHex(mode),
    ...(mode !== 'sev-snp' && spec?.dhCert ? { dhCert: spec.dhCert } : {}),
    ...(mode !== 'sev-snp' && spec?.session ? { session: spec.session } : {}),
  };
  if (mode === 'sev-snp') {
    domain.os.loader = { type: 'rom', value: firmware.snpCode };
    delete domain.os.nvram;
  } else {
    domain.os.loader = { readonly: 'yes', secure: 'no', type: 'pflash', value: firmware.sevCode };
    domain.os.nvram = { template: firmware.sevVars, value: domain.os.nvram?.value };
    if (!domain.os.nvram.value) delete domain.os.nvram.value;
  }
  // OVMF for SEV is built without SMM.
  if (domain.features?.smm) domain.features.smm = { state: 'off' };
  enableVirtioIommu(domain);
  domain.memoryBacking = { ...domain.memoryBacking, locked: {} };
}

/** The SEV/SEV-ES/SEV-SNP plugin. */
export function sevSnpPlugin(options: SevSnpPluginOptions = {}): HypervisorPlugin {
  const firmware = { ...debianSevFirmware, ...options.firmware };
  return {
    name: 'sev-snp',
    appliesTo: (vmi) => sevModeOf(vmi) !== undefined,
    mutateDomain(domain, vmi, ctx) {
      const mode = sevModeOf(vmi);
      if (mode) applySev(domain, vmi, mode, ctx.capabilities, firmware);
    },
    nodeLabels(caps) {
      const labels: Record<string, string> = {};
      if (caps.sev?.sev) labels[Labels.sev] = 'true';
      if (caps.sev?.sevEs) labels[Labels.sevES] = 'true';
      if (caps.sev?.sevSnp) labels[Labels.sevSNP] = 'true';
      return labels;
    },
    // Capacity: every encrypted guest needs an ASID; plain SEV guests use the SEV range,
    // SEV-ES and SNP guests the ES range.
    deviceResources(caps): Record<string, number> {
      if (!caps.sev?.sev) return {};
      return { [DeviceResources.sev]: caps.sev.maxGuests + caps.sev.maxEsGuests };
    },
    admissionRules: [sevAdmission],
    launcherOperations: sevLauncherOperations,
  };
}
