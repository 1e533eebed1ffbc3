import { describe, expect, it } from 'vitest';
import {
  combineSevCapabilities,
  parseDomcapsSev,
  probeSevCapabilities,
  readKvmAmdParams,
} from '../../../src/drivers/sev-snp';
import { domcapsOf, sysfsOf } from './hosts';

describe('SEV capabilities from domain capabilities and kvm_amd parameters', () => {
  it.each([
    ['none', { sev: false, sevEs: false, sevSnp: false, maxGuests: 0, maxEsGuests: 0, cbitpos: undefined }],
    ['sev', { sev: true, sevEs: false, sevSnp: false, maxGuests: 15, maxEsGuests: 0, cbitpos: 47 }],
    ['sev-es', { sev: true, sevEs: true, sevSnp: false, maxGuests: 502, maxEsGuests: 7, cbitpos: 51 }],
    ['snp', { sev: true, sevEs: true, sevSnp: true, maxGuests: 1006, maxEsGuests: 3, cbitpos: 51 }],
  ] as const)('host %s', async (host, expected) => {
    const caps = await probeSevCapabilities(domcapsOf(host), sysfsOf(host));
    expect(caps).toMatchObject(expected);
    if (expected.sev) expect(caps.reducedPhysBits).toBe(1);
  });

  it('reads Y/N and 1/0 parameters, and a missing kvm_amd module as all off', async () => {
    expect(await readKvmAmdParams(sysfsOf('sev'))).toEqual({ sev: true, sevEs: false, sevSnp: false });
    expect(await readKvmAmdParams(sysfsOf('snp'))).toEqual({ sev: true, sevEs: true, sevSnp: true });
    expect(await readKvmAmdParams(sysfsOf('none'))).toEqual({ sev: false, sevEs: false, sevSnp: false });
  });

  it('needs libvirt and the kernel to agree', async () => {
    // libvirt lists sev-snp, but the kernel's kvm_amd has no sev_snp: no SNP.
    const snpDomcaps = parseDomcapsSev(domcapsOf('snp'));
    expect(snpDomcaps.launchSecurityTypes).toEqual(['sev', 'sev-snp']);
    const esKernel = await readKvmAmdParams(sysfsOf('sev-es'));
    expect(combineSevCapabilities(snpDomcaps, esKernel)).toMatchObject({
      sev: true,
      sevEs: true,
      sevSnp: false,
    });
    // The kernel enables everything but libvirt says no: nothing.
    const snpKernel = await readKvmAmdParams(sysfsOf('snp'));
    expect(combineSevCapabilities(parseDomcapsSev(domcapsOf('none')), snpKernel)).toMatchObject({
      sev: false,
      sevEs: false,
      sevSnp: false,
      maxGuests: 0,
    });
  });

  it('rejects XML that is not domain capabilities', () => {
    expect(() => parseDomcapsSev('<capabilities/>')).toThrow('no <domainCapabilities> root element');
  });
});
