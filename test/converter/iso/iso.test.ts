/** ISO contents for cloud-init and config volumes, and real images built with xorriso and read back. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { buildIso, isoContents } from '../../../src/converter/iso';
import { integration } from '../../support/integration';

const tmp = mkdtempSync(path.join(tmpdir(), 'kvts-iso-test-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const USER_DATA = `#cloud-config\npassword: "<a>&'b\\""\nruncmd: [ "echo hi" ]\n`;

function vmi(volumes: VirtualMachineInstance['spec']['volumes']): VirtualMachineInstance {
  return {
    metadata: { name: 'vm1', namespace: 'ns', uid: 'u-1', labels: { app: 'web', tier: 'a"b' } },
    spec: { hostname: 'box', domain: { devices: {} }, volumes },
  };
}

describe('isoContents', () => {
  it('lays out NoCloud data with meta-data, user-data and network-config', () => {
    const c = isoContents(
      vmi([
        {
          name: 'ci',
          cloudInitNoCloud: {
            userData: USER_DATA,
            networkDataBase64: Buffer.from('version: 2\n').toString('base64'),
          },
        },
      ]),
      0,
    );
    expect(c).toEqual({
      label: 'cidata',
      files: {
        'meta-data': 'instance-id: vm1.ns\nlocal-hostname: box\n',
        'user-data': USER_DATA,
        'network-config': 'version: 2\n',
      },
    });
  });

  it('lays out ConfigDrive data under openstack/latest', () => {
    const c = isoContents(vmi([{ name: 'cd', cloudInitConfigDrive: { userData: 'x' } }]), 0)!;
    expect(c.label).toBe('config-2');
    expect(Object.keys(c.files).sort()).toEqual([
      'openstack/latest/meta_data.json',
      'openstack/latest/user_data',
    ]);
    expect(JSON.parse(String(c.files['openstack/latest/meta_data.json']))).toMatchObject({
      uuid: 'vm1.ns',
      hostname: 'box',
    });
  });

  it('puts accessCredentials SSH keys into the meta-data as upstream does, numbered from 0', () => {
    const keys = ['ssh-ed25519 AAAA a@x\n', '  ', 'ssh-rsa BBBB "b" \\ c'];
    const nc = isoContents(vmi([{ name: 'ci', cloudInitNoCloud: { userData: 'x' } }]), 0, {
      sshPublicKeys: keys,
    })!;
    expect(nc.files['meta-data']).toBe(
      'instance-id: vm1.ns\nlocal-hostname: box\npublic-keys:\n  "0": "ssh-ed25519 AAAA a@x"\n  "1": "ssh-rsa BBBB \\"b\\" \\\\ c"\n',
    );
    expect(parse(String(nc.files['meta-data']))['public-keys']).toEqual({
      '0': 'ssh-ed25519 AAAA a@x',
      '1': 'ssh-rsa BBBB "b" \\ c',
    });
    const cd = isoContents(vmi([{ name: 'cd', cloudInitConfigDrive: { userData: 'x' } }]), 0, {
      sshPublicKeys: keys,
    })!;
    expect(JSON.parse(String(cd.files['openstack/latest/meta_data.json'])).public_keys).toEqual({
      '0': 'ssh-ed25519 AAAA a@x',
      '1': 'ssh-rsa BBBB "b" \\ c',
    });
    // No keys: no public_keys field at all.
    const none = isoContents(vmi([{ name: 'cd', cloudInitConfigDrive: { userData: 'x' } }]), 0, {
      sshPublicKeys: [],
    })!;
    expect(JSON.parse(String(none.files['openstack/latest/meta_data.json']))).not.toHaveProperty(
      'public_keys',
    );
  });

  it('takes user data from a resolved secret and config volume files from resolved data', () => {
    expect(
      isoContents(vmi([{ name: 'ci', cloudInitNoCloud: { secretRef: { name: 's' } } }]), 0, {
        data: { userdata: 'from-secret' },
      })!.files['user-data'],
    ).toBe('from-secret');
    expect(
      isoContents(vmi([{ name: 'cm', configMap: { name: 'cm', volumeLabel: 'appcfg' } }]), 0, {
        data: { 'app.conf': 'a=1' },
      }),
    ).toEqual({ label: 'appcfg', files: { 'app.conf': 'a=1' } });
  });

  it('formats downward API labels like the kubelet', () => {
    const c = isoContents(
      vmi([
        {
          name: 'd',
          downwardAPI: { fields: [{ path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } }] },
        },
      ]),
      0,
    )!;
    expect(c.files.labels).toBe('app="web"\ntier="a\\"b"');
  });

  it('rejects keys that would escape the image, bad labels and bad base64 with field paths', () => {
    expect(() =>
      isoContents(vmi([{ name: 'cm', configMap: { name: 'cm' } }]), 0, { data: { '../x': 'a' } }),
    ).toThrow(/spec\.volumes\[0\]\.configMap: key '\.\.\/x' cannot be a file name/);
    expect(() =>
      isoContents(vmi([{ name: 'cm', configMap: { name: 'cm', volumeLabel: 'a b' } }]), 0),
    ).toThrow(/spec\.volumes\[0\]\.configMap\.volumeLabel: must be 1 to 32/);
    expect(() => isoContents(vmi([{ name: 'ci', cloudInitNoCloud: { userDataBase64: '!!' } }]), 0)).toThrow(
      /cloudInitNoCloud\.userDataBase64: is not valid base64/,
    );
    expect(isoContents(vmi([{ name: 'p', persistentVolumeClaim: { claimName: 'p' } }]), 0)).toBeUndefined();
  });
});

const hasXorriso = spawnSync('xorriso', ['-version'], { stdio: 'ignore' }).status === 0;

describe('buildIso', () => {
  const run = integration('xorriso', hasXorriso, 'xorriso (Debian package xorriso) is not installed');
  it.runIf(run)('builds a NoCloud image that reads back byte for byte with the cidata label', async () => {
    const contents = isoContents(vmi([{ name: 'ci', cloudInitNoCloud: { userData: USER_DATA } }]), 0)!;
    const iso = path.join(tmp, 'out', 'noCloud.iso');
    await buildIso(contents, iso);
    const pvd = spawnSync('xorriso', ['-indev', iso, '-pvd_info'], { encoding: 'utf8' });
    expect(`${pvd.stdout}${pvd.stderr}`).toMatch(/Volume Id\s*:\s*cidata/);
    const out = path.join(tmp, 'extract');
    const x = spawnSync('xorriso', ['-osirrox', 'on', '-indev', iso, '-extract', '/', out], {
      encoding: 'utf8',
    });
    expect(x.status).toBe(0);
    expect(readFileSync(path.join(out, 'user-data'), 'utf8')).toBe(USER_DATA);
    expect(readFileSync(path.join(out, 'meta-data'), 'utf8')).toBe(
      'instance-id: vm1.ns\nlocal-hostname: box\n',
    );
  });

  it('refuses file names and labels that are not plain', async () => {
    await expect(
      buildIso({ label: 'x', files: { '../evil': 'a' } }, path.join(tmp, 'e.iso')),
    ).rejects.toThrow(/not a plain relative path/);
    await expect(buildIso({ label: '-x', files: {} }, path.join(tmp, 'e.iso'))).rejects.toThrow();
    await expect(buildIso({ label: 'x', files: {} }, 'relative.iso')).rejects.toThrow(
      /must be an absolute path/,
    );
  });
});
