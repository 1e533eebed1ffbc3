/** `kubevirt-ts convert`: the function behind it, and the real command's output and exit codes. */
import { spawnSync } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { convertFile, parseSEVHost } from '../../src/cli/commands/convert';
import { decodeDomain } from '../../src/converter';
import { fixturesDir } from '../support/fixtures';

const repoRoot = path.resolve(import.meta.dirname, '../..');
const tmp = mkdtempSync(path.join(tmpdir(), 'kvts-cli-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const kvm = (() => {
  try {
    accessSync('/dev/kvm', constants.R_OK | constants.W_OK);
    return true;
  } catch {
    return false;
  }
})();

function write(name: string, text: string): string {
  const file = path.join(tmp, name);
  writeFileSync(file, text);
  return file;
}

const invalid = write(
  'invalid.yaml',
  `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: { name: broken }
spec:
  domain:
    memory: { guest: 64Mi }
    devices:
      disks: [{ name: missing, disk: {} }]
`,
);

describe('convertFile', () => {
  it('converts a fixture VMI after admission', async () => {
    const r = await convertFile(path.join(fixturesDir, 'vmi-pod-masquerade.yaml'), { emulation: true });
    expect(r.errors).toEqual([]);
    const d = decodeDomain(r.xml[0]);
    expect(d.name).toBe('default_vmi-pod-masquerade');
    expect(d.type).toBe(kvm ? 'kvm' : 'qemu');
  });

  it('resolves host devices given on the command line', async () => {
    const r = await convertFile(path.join(fixturesDir, 'vmi-gpu-device-plugin.yaml'), {
      emulation: true,
      hostDevice: ['gpu1=0000:81:00.0'],
    });
    expect(r.errors).toEqual([]);
    expect(decodeDomain(r.xml[0]).devices.hostdev?.[0].source.address).toEqual({
      domain: '0x0000',
      bus: '0x81',
      slot: '0x00',
      function: '0x0',
    });
  });

  it('previews a SEV-SNP VMI with the SEV host facts given by --sev', async () => {
    const snp = write(
      'snp.yaml',
      `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: { name: snp }
spec:
  domain:
    launchSecurity: { snp: {} }
    firmware: { bootloader: { efi: { secureBoot: false } } }
    memory: { guest: 1Gi }
    devices: {}
`,
    );
    const opts = { emulation: true, featureGates: 'WorkloadEncryptionSEV' };
    // Without host facts the converter says why, naming the field.
    expect((await convertFile(snp, opts)).errors[0]).toMatch(
      /spec\.domain\.launchSecurity: the host does not support AMD SEV/,
    );
    const r = await convertFile(snp, { ...opts, sev: 'cbitpos=51,reduced-phys-bits=1,es,snp' });
    expect(r.errors).toEqual([]);
    expect(decodeDomain(r.xml[0]).launchSecurity).toMatchObject({
      type: 'sev-snp',
      cbitpos: 51,
      reducedPhysBits: 1,
    });
    expect((await convertFile(snp, { ...opts, sev: 'cbitpos=51,reduced-phys-bits=1' })).errors[0]).toMatch(
      /launchSecurity\.snp: the host does not support SEV-SNP/,
    );
  });

  it('parses --sev strictly', () => {
    expect(parseSEVHost('cbitpos=47,reduced-phys-bits=5,es')).toEqual({
      sev: { cbitpos: 47, reducedPhysBits: 5, es: true, snp: false },
    });
    expect(parseSEVHost('cbitpos=47').error).toBe(
      "--sev: 'cbitpos=47' is not cbitpos=<n>,reduced-phys-bits=<n>[,es][,snp]",
    );
    expect(parseSEVHost('cbitpos=47,reduced-phys-bits=1,tdx').error).toMatch(/^--sev: /);
  });

  it('reports admission errors with field paths and produces no XML', async () => {
    const r = await convertFile(invalid, {});
    expect(r.xml).toEqual([]);
    expect(r.errors.join('\n')).toMatch(
      /VirtualMachineInstance\/broken: spec\.domain\.devices\.disks\[0\]\.name: .*missing/,
    );
  });

  it('refuses an unknown architecture and a malformed host device', async () => {
    expect((await convertFile(invalid, { arch: 'z80' })).errors[0]).toMatch(/^--arch: 'z80' is not one of/);
    expect((await convertFile(invalid, { hostDevice: ['gpu'] })).errors[0]).toMatch(
      /^--host-device: 'gpu' is not/,
    );
  });
});

describe('kubevirt-ts convert (process)', () => {
  const cli = (...args: string[]) =>
    spawnSync(
      path.join(repoRoot, 'node_modules/.bin/tsx'),
      [path.join(repoRoot, 'src/cli/kubevirt-ts.ts'), 'convert', ...args],
      { encoding: 'utf8' },
    );

  it('prints domain XML and exits 0, or prints field-path errors and exits 1', () => {
    const ok = cli('--emulation', path.join(fixturesDir, 'vmi-containerdisk.yaml'));
    expect(ok.status).toBe(0);
    expect(ok.stdout).toMatch(/^<domain type="(kvm|qemu)">\n {2}<name>default_vmi-containerdisk<\/name>/);
    const bad = cli(invalid);
    expect(bad.status).toBe(1);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toMatch(/spec\.domain\.devices\.disks\[0\]\.name/);
  });
});
