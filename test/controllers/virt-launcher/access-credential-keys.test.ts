/**
 * accessCredentials SSH keys in the launcher: read from each Secret where the launcher pod
 * mounts it (laid out as kubelet lays a secret volume out), only for the entries whose
 * propagationMethod is the cloud-init volume's kind, and written by the VolumePreparer into
 * the real ISO's meta-data (NoCloud `public-keys`, ConfigDrive `public_keys`), read back
 * with xorriso.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { AccessCredential, VirtualMachineInstance } from '../../../src/api';
import { PathMap } from '../../../src/controllers/common/path-map';
import { writeAtomic } from '../../../src/controllers/local/pod-runtime/atomic-writer';
import { readSshPublicKeys } from '../../../src/controllers/virt-launcher/access-credential-keys';
import { VolumePreparer } from '../../../src/controllers/virt-launcher/volume-prep';
import { type ConverterPaths, upstreamPaths } from '../../../src/converter';
import { imageToolsRun } from './image-tools';

const KEY_A = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa a@x';
const KEY_B = 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCbbbb b "quoted" comment';
const KEY_C = 'ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYcccc c@y';

const cred = (secretName: string, method: 'noCloud' | 'configDrive'): AccessCredential => ({
  sshPublicKey: { source: { secret: { secretName } }, propagationMethod: { [method]: {} } },
});

function vmi(volume: 'noCloud' | 'configDrive', creds: AccessCredential[]): VirtualMachineInstance {
  const ci =
    volume === 'noCloud'
      ? { cloudInitNoCloud: { userData: '#cloud-config\n' } }
      : { cloudInitConfigDrive: { userData: '#cloud-config\n' } };
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'vm1', namespace: 'ns1', uid: 'u1' },
    spec: {
      domain: { devices: { disks: [{ name: 'ci' }] } },
      volumes: [{ name: 'ci', ...ci }],
      accessCredentials: creds,
    },
  } as VirtualMachineInstance;
}

function isoCat(file: string, path: string, scratch: string): string {
  const out = join(scratch, `extract-${Math.random().toString(16).slice(2)}`);
  execFileSync('xorriso', ['-osirrox', 'on', '-indev', file, '-extract', path, out], { stdio: 'ignore' });
  return readFileSync(out, 'utf8');
}

let dir: string;
let map: PathMap;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'kvts-access-cred-'));
  const secret = async (name: string, files: Record<string, string>): Promise<[string, string]> => {
    const host = join(dir, 'secrets', name);
    await writeAtomic(
      host,
      new Map(Object.entries(files).map(([k, v]) => [k, { data: Buffer.from(v), mode: 0o644 }])),
    );
    return [`/var/run/kubevirt-private/secret/${name}-access-cred`, host];
  };
  map = new PathMap(
    Object.fromEntries([
      // Keys by file name: "b-key" after "a-key"; an empty key is skipped; a trailing newline trimmed.
      await secret('team', { 'b-key': `${KEY_B}\n`, 'a-key': KEY_A, empty: '  \n' }),
      await secret('ops', { key: KEY_C }),
    ]),
  );
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('readSshPublicKeys', () => {
  it("reads every key of each entry's Secret in spec order, skipping kubelet's .. entries", async () => {
    const v = vmi('noCloud', [cred('team', 'noCloud'), cred('ops', 'noCloud')]);
    expect(await readSshPublicKeys(v, 'noCloud', map)).toEqual([KEY_A, KEY_B, KEY_C]);
  });

  it('takes only the entries of the asked propagation method', async () => {
    const v = vmi('noCloud', [cred('team', 'configDrive'), cred('ops', 'noCloud')]);
    expect(await readSshPublicKeys(v, 'noCloud', map)).toEqual([KEY_C]);
    expect(await readSshPublicKeys(v, 'configDrive', map)).toEqual([KEY_A, KEY_B]);
  });

  it('names the entry when its Secret is not mounted', async () => {
    const v = vmi('noCloud', [cred('ops', 'noCloud'), cred('absent', 'noCloud')]);
    await expect(readSshPublicKeys(v, 'noCloud', map)).rejects.toThrow(
      /^spec\.accessCredentials\[1\]\.sshPublicKey\.source\.secret\.secretName: secret 'absent' is not mounted at \/var\/run\/kubevirt-private\/secret\/absent-access-cred: /,
    );
  });

  it('refuses a Secret name that is not a DNS label before it becomes a path', async () => {
    const v = vmi('noCloud', [cred('../etc', 'noCloud')]);
    await expect(readSshPublicKeys(v, 'noCloud', map)).rejects.toThrow(
      "spec.accessCredentials[0].sshPublicKey.source.secret.secretName: '../etc' must be a DNS label (it names a directory)",
    );
  });
});

describe.skipIf(!imageToolsRun())('the cloud-init ISO with accessCredentials keys (xorriso)', () => {
  const paths = (sub: string): ConverterPaths => {
    const p = { ...upstreamPaths };
    for (const k of Object.keys(p) as Array<keyof ConverterPaths>) p[k] = join(dir, sub, k);
    return p;
  };

  it('NoCloud: meta-data lists the keys under public-keys', async () => {
    const p = paths('nocloud');
    const r = await new VolumePreparer({ paths: p, pathMap: map }).prepare(
      vmi('noCloud', [cred('team', 'noCloud'), cred('ops', 'configDrive')]),
    );
    const iso = join(p.cloudInitDir, 'ns1', 'vm1', 'noCloud.iso');
    expect(r.created).toEqual([iso]);
    const meta = isoCat(iso, '/meta-data', dir);
    expect(parse(meta)).toEqual({
      'instance-id': 'vm1.ns1',
      'local-hostname': 'vm1',
      'public-keys': { '0': KEY_A, '1': KEY_B },
    });
    expect(isoCat(iso, '/user-data', dir)).toBe('#cloud-config\n');
  });

  it('ConfigDrive: meta_data.json has public_keys', async () => {
    const p = paths('configdrive');
    const r = await new VolumePreparer({ paths: p, pathMap: map }).prepare(
      vmi('configDrive', [cred('ops', 'configDrive')]),
    );
    const meta = JSON.parse(isoCat(r.created[0], '/openstack/latest/meta_data.json', dir));
    expect(meta.public_keys).toEqual({ '0': KEY_C });
    expect(meta.uuid).toBe('vm1.ns1');
  });

  it('fails the preparation naming the VMI and the entry when a Secret is not mounted', async () => {
    await expect(
      new VolumePreparer({ paths: paths('missing'), pathMap: map }).prepare(
        vmi('noCloud', [cred('gone', 'noCloud')]),
      ),
    ).rejects.toThrow(
      /^VirtualMachineInstance ns1\/vm1: spec\.accessCredentials\[0\]\.sshPublicKey\.source\.secret\.secretName: secret 'gone' is not mounted/,
    );
  });
});
