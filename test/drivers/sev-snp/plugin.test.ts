import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api';
import { convertVMI, type Domain, defaultConverterContext, encodeDomain } from '../../../src/converter';
import type { HostCapabilities } from '../../../src/drivers/driver';
import { DriverError } from '../../../src/drivers/errors';
import { DriverRegistry } from '../../../src/drivers/registry';
import { sevAdmission, sevModeOf, sevPolicyHex, sevSnpPlugin } from '../../../src/drivers/sev-snp';
import { integration } from '../../support/integration';
import { capsOf, HOSTS } from './hosts';

const validatorAvailable = (() => {
  try {
    execFileSync('which', ['virt-xml-validate']);
    return true;
  } catch {
    return false;
  }
})();
const validate = integration(
  'virt-xml-validate',
  validatorAvailable,
  'virt-xml-validate is not installed (Debian package libvirt-clients)',
);

const work = mkdtempSync(join(tmpdir(), 'kvts-test-drv-sev-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/** Runs libvirt's schema checker on `xml`; returns its verdict text. */
function virtXmlValidate(name: string, xml: string): { ok: boolean; output: string } {
  const file = join(work, `${name}.xml`);
  writeFileSync(file, xml);
  const r = spawnSync('virt-xml-validate', [file, 'domain'], { encoding: 'utf8' });
  return { ok: r.status === 0, output: `${r.stdout}${r.stderr}` };
}

function sevVmi(launchSecurity: Record<string, unknown>, name = 'conf'): VirtualMachineInstance {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name, namespace: 'ns', uid: '6a1a24a1-4061-4607-8bf4-a3963d0c5895' },
    spec: {
      domain: {
        firmware: { bootloader: { efi: { secureBoot: false } } },
        launchSecurity,
        resources: { requests: { memory: '256Mi' } },
        devices: {
          disks: [{ name: 'root', disk: { bus: 'virtio' } }],
          rng: {},
        },
      },
      volumes: [{ name: 'root', containerDisk: { image: 'example.org/disk:1' } }],
    },
  } as VirtualMachineInstance;
}

/** Converts like the libvirt driver does, then applies the plugin. */
function confidentialDomain(vmi: VirtualMachineInstance, caps: HostCapabilities): Domain {
  const sev = caps.sev;
  const ctx = defaultConverterContext({
    sev: sev?.sev
      ? {
          cbitpos: sev.cbitpos ?? 0,
          reducedPhysBits: sev.reducedPhysBits ?? 0,
          es: sev.sevEs,
          snp: sev.sevSnp,
        }
      : undefined,
  });
  const domain = convertVMI(vmi, ctx);
  sevSnpPlugin().mutateDomain?.(domain, vmi, { capabilities: caps, options: {}, driver: 'libvirt' });
  return domain;
}

describe('sev-snp plugin: node labels and capacity', () => {
  it.each([
    ['none', {}, {}],
    ['sev', { 'kubevirt.io/sev': 'true' }, { 'devices.kubevirt.io/sev': 15 }],
    [
      'sev-es',
      { 'kubevirt.io/sev': 'true', 'kubevirt.io/sev-es': 'true' },
      { 'devices.kubevirt.io/sev': 509 },
    ],
    [
      'snp',
      { 'kubevirt.io/sev': 'true', 'kubevirt.io/sev-es': 'true', 'kubevirt.io/sev-snp': 'true' },
      { 'devices.kubevirt.io/sev': 1009 },
    ],
  ] as const)('host %s', async (host, labels, resources) => {
    const registry = new DriverRegistry([], [sevSnpPlugin()]);
    const caps = await capsOf(host);
    expect(registry.nodeLabels(caps)).toEqual(labels);
    expect(registry.deviceResources(caps)).toEqual(resources);
  });
});

describe('sev-snp plugin: policies and domain', () => {
  it('computes upstream policies', () => {
    expect(sevPolicyHex('sev')).toBe('0x1');
    expect(sevPolicyHex('sev-es')).toBe('0x5');
    expect(sevPolicyHex('sev-snp')).toBe('0x30000');
    expect(sevModeOf(sevVmi({ sev: {} }))).toBe('sev');
    expect(sevModeOf(sevVmi({ sev: { policy: { encryptedState: true } } }))).toBe('sev-es');
    expect(sevModeOf(sevVmi({ snp: {} }))).toBe('sev-snp');
    expect(sevModeOf(sevVmi({}))).toBeUndefined();
  });

  it.each([
    ['sev', { sev: { dhCert: 'ZGhjZXJ0', session: 'c2Vzc2lvbg==' } }, '0x1'],
    ['sev-es', { sev: { policy: { encryptedState: true } } }, '0x5'],
  ] as const)(
    '%s: launchSecurity, firmware, iommu on virtio devices; XML valid for libvirt',
    async (host, ls, policy) => {
      const domain = confidentialDomain(sevVmi(ls), await capsOf(host));
      expect(domain.launchSecurity).toMatchObject({
        type: 'sev',
        policy,
        cbitpos: host === 'sev' ? 47 : 51,
        reducedPhysBits: 1,
      });
      if (host === 'sev')
        expect(domain.launchSecurity).toMatchObject({ dhCert: 'ZGhjZXJ0', session: 'c2Vzc2lvbg==' });
      expect(domain.os.loader).toEqual({
        readonly: 'yes',
        secure: 'no',
        type: 'pflash',
        value: '/usr/share/OVMF/OVMF_CODE_4M.fd',
      });
      expect(domain.os.nvram?.template).toBe('/usr/share/OVMF/OVMF_VARS_4M.fd');
      expect(domain.memoryBacking?.locked).toEqual({});
      const virtioDisks = (domain.devices.disk ?? []).filter((d) => d.target.bus === 'virtio');
      expect(virtioDisks.length).toBeGreaterThan(0);
      for (const d of virtioDisks) expect(d.driver?.iommu).toBe('on');
      for (const r of domain.devices.rng ?? []) expect(r.driver?.iommu).toBe('on');
      if (domain.devices.memballoon?.model !== 'none')
        expect(domain.devices.memballoon?.driver?.iommu).toBe('on');
      for (const c of domain.devices.controller ?? []) {
        if (c.type === 'virtio-serial') expect(c.driver?.iommu).toBe('on');
      }
      const xml = encodeDomain(domain);
      expect(xml).toContain(`<policy>${policy}</policy>`);
      if (validate) {
        const verdict = virtXmlValidate(host, xml);
        expect(verdict.output).toContain('validates');
        expect(verdict.ok).toBe(true);
      }
    },
  );

  it('snp: sev-snp launchSecurity with the default policy and a stateless ROM firmware', async () => {
    const domain = confidentialDomain(sevVmi({ snp: {} }), await capsOf('snp'));
    expect(domain.launchSecurity).toMatchObject({ type: 'sev-snp', policy: '0x30000', cbitpos: 51 });
    expect(domain.os.loader).toEqual({ type: 'rom', value: '/usr/share/ovmf/OVMF.fd' });
    expect(domain.os.nvram).toBeUndefined();
    const xml = encodeDomain(domain);
    expect(xml).toMatch(/<launchSecurity type="sev-snp">/);
    if (validate) {
      // libvirt 9.0's schema predates sev-snp (added in libvirt 10.5): it must reject
      // only that, so everything else the plugin wrote is checked against the schema.
      expect(virtXmlValidate('snp-full', xml).ok).toBe(false);
      const withoutLs = xml.replace(/<launchSecurity[\s\S]*?<\/launchSecurity>/, '');
      const verdict = virtXmlValidate('snp-rest', withoutLs);
      expect(verdict.output).toContain('validates');
    }
  });

  it.each([
    ['none', { sev: {} }, 'spec.domain.launchSecurity.sev: this host does not support SEV'],
    [
      'sev',
      { sev: { policy: { encryptedState: true } } },
      'spec.domain.launchSecurity.sev.policy.encryptedState: this host does not support SEV-ES',
    ],
    ['sev-es', { snp: {} }, 'spec.domain.launchSecurity.snp: this host does not support SEV-SNP'],
  ] as const)('refuses on host %s, naming the field', async (host, ls, message) => {
    const caps = await capsOf(host);
    const vmi = sevVmi(ls);
    const domain = convertVMI(sevVmi({}), defaultConverterContext());
    const plugin = sevSnpPlugin();
    let err: unknown;
    try {
      plugin.mutateDomain?.(domain, vmi, { capabilities: caps, options: {}, driver: 'libvirt' });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DriverError);
    expect((err as DriverError).code).toBe('Unsupported');
    expect((err as DriverError).message).toContain(`VirtualMachineInstance ns/conf: ${message}`);
  });
});

describe('sev-snp plugin: admission', () => {
  it('accepts a well-formed SEV VMI and ignores plain VMIs', () => {
    expect(sevAdmission(sevVmi({ sev: {} }))).toEqual([]);
    expect(sevAdmission(sevVmi({}))).toEqual([]);
  });

  it('rejects what upstream rejects, by field path', () => {
    const both = sevVmi({ sev: {}, snp: {} });
    expect(sevAdmission(both).map((c) => c.field)).toEqual(['spec.domain.launchSecurity']);
    const noEfi = sevVmi({ sev: {} });
    delete noEfi.spec?.domain.firmware;
    expect(sevAdmission(noEfi)).toEqual([
      {
        field: 'spec.domain.firmware.bootloader.efi',
        message: 'SEV requires OVMF (UEFI): set spec.domain.firmware.bootloader.efi with secureBoot: false',
      },
    ]);
    const secure = sevVmi({ sev: {} });
    (secure.spec?.domain.firmware?.bootloader?.efi as { secureBoot?: boolean }).secureBoot = true;
    expect(sevAdmission(secure).map((c) => c.field)).toEqual([
      'spec.domain.firmware.bootloader.efi.secureBoot',
    ]);
    const attest = sevVmi({ sev: { attestation: {}, dhCert: 'not base64!' } });
    expect(sevAdmission(attest).map((c) => c.field)).toEqual([
      'spec.startStrategy',
      'spec.domain.launchSecurity.sev.dhCert',
    ]);
  });
});

it('covers every fixture host', () => {
  expect(HOSTS).toHaveLength(4);
});
