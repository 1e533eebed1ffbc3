/**
 * The launcher's preparation of emptyDisk, hostDisk, config-volume and cloud-init
 * secretRef volumes with the real qemu-img and xorriso: sizes, sparse files, clear errors
 * naming the volume and the path, ISO labels and contents read back from the image, and
 * files read through the pod's path map from a volume laid out as kubelet lays it out.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api';
import { PathMap } from '../../../src/controllers/common/path-map';
import { writeAtomic } from '../../../src/controllers/local/pod-runtime/atomic-writer';
import { emptyDiskBytes } from '../../../src/controllers/virt-launcher/empty-disk';
import { VolumePreparer } from '../../../src/controllers/virt-launcher/volume-prep';
import { type ConverterPaths, upstreamPaths } from '../../../src/converter';
import { imageToolsRun } from './image-tools';

const run = imageToolsRun();

type Volumes = NonNullable<VirtualMachineInstance['spec']['volumes']>;

function vmi(volumes: Volumes, disks = volumes.map((v) => v.name)): VirtualMachineInstance {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'vm1', namespace: 'ns1', uid: 'u1' },
    spec: { domain: { devices: { disks: disks.map((name) => ({ name })) } }, volumes },
  } as VirtualMachineInstance;
}

const qemuInfo = (file: string): { format: string; 'virtual-size': number } =>
  JSON.parse(execFileSync('qemu-img', ['info', '--output=json', file], { encoding: 'utf8' }));

/** The ISO's primary volume descriptor label (sector 16, offset 40, 32 bytes). */
const isoLabel = (file: string) =>
  readFileSync(file)
    .subarray(16 * 2048 + 40, 16 * 2048 + 72)
    .toString('latin1')
    .trimEnd();

/** The entries of the ISO's root (Rock Ridge names) and one file's content, read back with xorriso. */
function isoLs(file: string): string[] {
  const out = execFileSync('xorriso', ['-indev', file, '-ls', '/'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return out
    .split('\n')
    .map((l) => l.trim().replace(/^'|'$/g, ''))
    .filter(Boolean)
    .sort();
}
function isoCat(file: string, path: string, scratch: string): string {
  const out = join(scratch, `extract-${Math.random().toString(16).slice(2)}`);
  execFileSync('xorriso', ['-osirrox', 'on', '-indev', file, '-extract', path, out], { stdio: 'ignore' });
  return readFileSync(out, 'utf8');
}

describe.skipIf(!run)('launcher volume kinds', () => {
  let dir: string;
  let paths: ConverterPaths;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'kvts-volkinds-'));
    paths = { ...upstreamPaths };
    for (const k of Object.keys(paths) as Array<keyof ConverterPaths>) paths[k] = join(dir, 'pod', k);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  describe('emptyDisk', () => {
    it('creates a qcow2 of the capacity rounded down to whole MiB, once', async () => {
      const prep = new VolumePreparer({ paths });
      const v = vmi([
        { name: 'scratch', emptyDisk: { capacity: '64Mi' } },
        { name: 'odd', emptyDisk: { capacity: '1500000' } },
      ]);
      const r = await prep.prepare(v);
      const scratch = join(paths.emptyDiskDir, 'scratch.qcow2');
      const odd = join(paths.emptyDiskDir, 'odd.qcow2');
      expect(r.created.sort()).toEqual([odd, scratch].sort());
      expect(qemuInfo(scratch)).toMatchObject({ format: 'qcow2', 'virtual-size': 64 * 1024 * 1024 });
      expect(qemuInfo(odd)['virtual-size']).toBe(1024 * 1024);
      // A re-sync (or a launcher restarted in the same pod) keeps the guest's disk.
      expect((await new VolumePreparer({ paths }).prepare(v)).created).toEqual([]);
    });

    it('refuses capacities under 1Mi or malformed, naming the field', async () => {
      expect(() => emptyDiskBytes('100Ki', 'f')).toThrow('f: "100Ki" is under 1Mi, too small for a disk');
      await expect(
        new VolumePreparer({ paths }).prepare(vmi([{ name: 'e', emptyDisk: { capacity: '12 parsecs' } }])),
      ).rejects.toThrow(
        /VirtualMachineInstance ns1\/vm1: spec\.volumes\[0\]\.emptyDisk\.capacity: invalid quantity/,
      );
    });
  });

  describe('hostDisk', () => {
    const mapFor = (volume: string, hostDir: string) =>
      new PathMap({ [`/var/run/kubevirt-private/vmi-disks/${volume}`]: hostDir });

    it('creates a sparse raw file of the capacity (and its directory) for DiskOrCreate, once', async () => {
      const hostDir = join(dir, 'host', 'a', 'b');
      const file = join(hostDir, 'data.img');
      const v = vmi([{ name: 'hd', hostDisk: { path: file, type: 'DiskOrCreate', capacity: '256Mi' } }]);
      const prep = new VolumePreparer({ paths, pathMap: mapFor('hd', hostDir) });
      expect((await prep.prepare(v)).created).toEqual([file]);
      const st = statSync(file);
      expect(st.size).toBe(256 * 1024 * 1024);
      expect(st.blocks * 512).toBeLessThan(1024 * 1024); // sparse: nothing written yet
      expect(qemuInfo(file).format).toBe('raw');
      writeFileSync(file, 'guest data', { flag: 'r+' });
      expect((await prep.prepare(v)).created).toEqual([]);
      expect(readFileSync(file).subarray(0, 10).toString()).toBe('guest data');
    });

    it('needs an existing file for type Disk, naming the volume and the path', async () => {
      const hostDir = join(dir, 'host-disk');
      mkdirSync(hostDir, { recursive: true });
      const file = join(hostDir, 'missing.img');
      const prep = new VolumePreparer({ paths, pathMap: mapFor('hd', hostDir) });
      await expect(
        prep.prepare(vmi([{ name: 'hd', hostDisk: { path: file, type: 'Disk' } }])),
      ).rejects.toThrow(
        `VirtualMachineInstance ns1/vm1: spec.volumes[0].hostDisk.path: "${file}" does not exist (volume 'hd' has type Disk`,
      );
      writeFileSync(join(hostDir, 'there.img'), Buffer.alloc(4096));
      expect(
        (
          await prep.prepare(
            vmi([{ name: 'hd', hostDisk: { path: join(hostDir, 'there.img'), type: 'Disk' } }]),
          )
        ).created,
      ).toEqual([]);
    });

    it('rejects unsafe paths and a DiskOrCreate without capacity', async () => {
      const prep = new VolumePreparer({ paths, pathMap: mapFor('hd', dir) });
      await expect(
        prep.prepare(
          vmi([
            { name: 'hd', hostDisk: { path: `${dir}/../etc/x.img`, type: 'DiskOrCreate', capacity: '1Mi' } },
          ]),
        ),
      ).rejects.toThrow(/spec\.volumes\[0\]\.hostDisk\.path: ".*" must not contain "\." or "\.\." segments/);
      await expect(
        prep.prepare(
          vmi([{ name: 'hd', hostDisk: { path: `${dir}/a\nb.img`, type: 'DiskOrCreate', capacity: '1Mi' } }]),
        ),
      ).rejects.toThrow(
        /spec\.volumes\[0\]\.hostDisk\.path: ".*a\\nb\.img" must not contain control characters/,
      );
      await expect(
        prep.prepare(vmi([{ name: 'hd', hostDisk: { path: `${dir}/nocap.img`, type: 'DiskOrCreate' } }])),
      ).rejects.toThrow(/spec\.volumes\[0\]\.hostDisk\.capacity: is required/);
      expect(existsSync(join(dir, 'nocap.img'))).toBe(false);
    });
  });

  describe('persistentVolumeClaim', () => {
    /** The claim info the VMI controller records (status.volumeStatus). */
    const withClaimInfo = (v: VirtualMachineInstance, name: string, info: Record<string, unknown>) => {
      v.status = { volumeStatus: [{ name, target: '', persistentVolumeClaimInfo: info }] };
      return v;
    };

    it('keeps an existing disk.img; without one and without the claim info it names the claim, the volume and the path', async () => {
      const claimDir = mkdtempSync(join(dir, 'claim-'));
      const map = new PathMap({ '/var/run/kubevirt-private/vmi-disks/root': claimDir });
      const v = vmi([{ name: 'root', persistentVolumeClaim: { claimName: 'root-claim' } }]);
      await expect(new VolumePreparer({ paths, pathMap: map }).prepare(v)).rejects.toThrow(
        `spec.volumes[0].persistentVolumeClaim: claim 'root-claim' of volume 'root' holds no disk image: /var/run/kubevirt-private/vmi-disks/root/disk.img (host ${claimDir}/disk.img) is missing, and status.volumeStatus[root].persistentVolumeClaimInfo`,
      );
      writeFileSync(join(claimDir, 'disk.img'), Buffer.alloc(4096));
      const prep = new VolumePreparer({ paths, pathMap: map });
      expect((await prep.prepare(v)).created).toEqual([]);
      expect(statSync(join(claimDir, 'disk.img')).size).toBe(4096);
      expect(prep.blockVolumes.size).toBe(0);
      // A DataVolume's claim has the DataVolume's name and the same layout.
      const dvDir = mkdtempSync(join(dir, 'dv-'));
      const dvMap = new PathMap({ '/var/run/kubevirt-private/vmi-disks/data': dvDir });
      await expect(
        new VolumePreparer({ paths, pathMap: dvMap }).prepare(
          vmi([{ name: 'data', dataVolume: { name: 'dv1' } }]),
        ),
      ).rejects.toThrow("spec.volumes[0].dataVolume: claim 'dv1' of volume 'data' holds no disk image");
    });

    it('creates disk.img sparse, of the request when below the capacity, else of the capacity, 1 MiB aligned', async () => {
      const make = async (info: Record<string, unknown>) => {
        const claimDir = mkdtempSync(join(dir, 'claim-'));
        const map = new PathMap({ '/var/run/kubevirt-private/vmi-disks/data': claimDir });
        const v = withClaimInfo(vmi([{ name: 'data', persistentVolumeClaim: { claimName: 'c1' } }]), 'data', {
          claimName: 'c1',
          volumeMode: 'Filesystem',
          ...info,
        });
        const created = (await new VolumePreparer({ paths, pathMap: map }).prepare(v)).created;
        expect(created).toEqual([join(claimDir, 'disk.img')]);
        const st = statSync(created[0]);
        expect(st.blocks).toBe(0);
        return st.size;
      };
      // upstream replaceForHostDisk: the request when the capacity is larger ...
      expect(await make({ requests: { storage: '10Mi' }, capacity: { storage: '12Mi' } })).toBe(10 * 2 ** 20);
      // ... the capacity when it is not larger, or the request alone; aligned down to 1 MiB.
      expect(await make({ requests: { storage: '12Mi' }, capacity: { storage: '10Mi' } })).toBe(10 * 2 ** 20);
      expect(await make({ requests: { storage: '5000000' } })).toBe(4 * 2 ** 20);
      expect(await make({ capacity: { storage: '3Mi' } })).toBe(3 * 2 ** 20);
    });

    it('refuses a claim too small for its disk.img, and one smaller than 1 MiB', async () => {
      const claimDir = mkdtempSync(join(dir, 'claim-'));
      const map = new PathMap({ '/var/run/kubevirt-private/vmi-disks/data': claimDir });
      const huge = withClaimInfo(
        vmi([{ name: 'data', persistentVolumeClaim: { claimName: 'c1' } }]),
        'data',
        {
          requests: { storage: '1Pi' },
        },
      );
      await expect(new VolumePreparer({ paths, pathMap: map }).prepare(huge)).rejects.toThrow(
        /spec\.volumes\[0\]\.persistentVolumeClaim: unable to create \/var\/run\/kubevirt-private\/vmi-disks\/data\/disk\.img, not enough space, demanded size 1125899906842624 B is bigger than available space \d+ B, also after taking 10 % toleration into account/,
      );
      const tiny = withClaimInfo(
        vmi([{ name: 'data', persistentVolumeClaim: { claimName: 'c1' } }]),
        'data',
        {
          requests: { storage: '1000Ki' },
        },
      );
      await expect(new VolumePreparer({ paths, pathMap: map }).prepare(tiny)).rejects.toThrow(
        'spec.volumes[0].persistentVolumeClaim: the size for volume data is too low, must be at least 1MiB',
      );
      expect(existsSync(join(claimDir, 'disk.img'))).toBe(false);
    });

    it('takes a volumeMode Block claim as its device at /dev/<volume>, and refuses one that is not a device', async () => {
      const devDir = mkdtempSync(join(dir, 'dev-'));
      const v = withClaimInfo(vmi([{ name: 'blk', persistentVolumeClaim: { claimName: 'b1' } }]), 'blk', {
        claimName: 'b1',
        volumeMode: 'Block',
      });
      const map = new PathMap({ '/dev/blk': join(devDir, 'blk') });
      const prep = new VolumePreparer({ paths, pathMap: map });
      await expect(prep.prepare(v)).rejects.toThrow(
        `spec.volumes[0].persistentVolumeClaim: claim 'b1' of volume 'blk' is volumeMode Block but /dev/blk (host ${devDir}/blk) is not a block device`,
      );
      writeFileSync(join(devDir, 'blk'), 'x');
      await expect(prep.prepare(v)).rejects.toThrow('is not a block device');
      // A real block device node (the host's loop-control is a char device; /dev/loop0 a block one).
      const prepDev = new VolumePreparer({ paths, pathMap: new PathMap({ '/dev/blk': '/dev/loop0' }) });
      expect((await prepDev.prepare(v)).created).toEqual([]);
      expect([...prepDev.blockVolumes]).toEqual(['blk']);
    });
  });

  describe('config volumes', () => {
    /** A volume directory as the pod runtime writes it, mapped where the pod mounts it. */
    async function mounted(containerPath: string, files: Record<string, string>): Promise<[string, string]> {
      const host = mkdtempSync(join(dir, 'vol-'));
      await writeAtomic(
        host,
        new Map(Object.entries(files).map(([k, v]) => [k, { data: Buffer.from(v), mode: 0o644 }])),
      );
      return [containerPath, host];
    }

    it('builds the configMap ISO labelled cfgdata from the mounted files, without kubelet internals', async () => {
      const map = new PathMap(
        Object.fromEntries([
          await mounted('/var/run/kubevirt-private/config-map/cfg', {
            'app.conf': 'port=80\n',
            'nested/x': 'y',
          }),
          await mounted('/var/run/kubevirt-private/secret/sec', { token: 'abc' }),
        ]),
      );
      const v = vmi([
        { name: 'cfg', configMap: { name: 'app' } },
        { name: 'sec', secret: { secretName: 's', volumeLabel: 'OEMDRV' } },
      ]);
      const r = await new VolumePreparer({ paths, pathMap: map }).prepare(v);
      const cfgIso = join(paths.configDiskDir, 'config-map-disks', 'cfg.iso');
      const secIso = join(paths.configDiskDir, 'secret-disks', 'sec.iso');
      expect(r.created.sort()).toEqual([cfgIso, secIso].sort());
      expect(isoLabel(cfgIso)).toBe('cfgdata');
      expect(isoLabel(secIso)).toBe('OEMDRV');
      expect(isoLs(cfgIso)).toEqual(['app.conf', 'nested']);
      expect(isoCat(cfgIso, '/app.conf', dir)).toBe('port=80\n');
      expect(isoCat(cfgIso, '/nested/x', dir)).toBe('y');
      expect(isoCat(secIso, '/token', dir)).toBe('abc');
    });

    it('builds no ISO for a config volume no disk uses, and names an unmounted one', async () => {
      const prep = new VolumePreparer({ paths, pathMap: new PathMap({}) });
      expect((await prep.prepare(vmi([{ name: 'unused', configMap: { name: 'x' } }], []))).created).toEqual(
        [],
      );
      await expect(prep.prepare(vmi([{ name: 'dapi', downwardAPI: { fields: [] } }]))).rejects.toThrow(
        "spec.volumes[0].downwardAPI: volume 'dapi' is not mounted in the launcher pod (/var/run/kubevirt-private/downwardapi/dapi",
      );
    });

    it('builds service-account.iso from the pod token volume', async () => {
      const map = new PathMap(
        Object.fromEntries([
          await mounted('/var/run/secrets/kubernetes.io/serviceaccount', {
            token: 'aaa.bbb.ccc',
            'ca.crt': 'PEM',
            namespace: 'ns1',
          }),
        ]),
      );
      const r = await new VolumePreparer({ paths, pathMap: map }).prepare(
        vmi([{ name: 'sa', serviceAccount: { serviceAccountName: 'default' } }]),
      );
      const iso = join(paths.configDiskDir, 'service-account-disk', 'service-account.iso');
      expect(r.created).toEqual([iso]);
      expect(isoLabel(iso)).toBe('cfgdata');
      expect(isoLs(iso)).toEqual(['ca.crt', 'namespace', 'token']);
      expect(isoCat(iso, '/token', dir)).toBe('aaa.bbb.ccc');
    });

    it("never packs the host's own token directory when no pod mount covers it", async () => {
      // A path map without the token mount (local mode: no ServiceAccount admission).
      const map = new PathMap({ '/var/run/kubevirt-private': join(dir, 'private-only') });
      const fresh = { ...paths, configDiskDir: join(dir, 'private-only') };
      await expect(
        new VolumePreparer({ paths: fresh, pathMap: map }).prepare(
          vmi([{ name: 'sa2', serviceAccount: { serviceAccountName: 'default' } }]),
        ),
      ).rejects.toThrow(
        "spec.volumes[0].serviceAccount: volume 'sa2' is not mounted in the launcher pod (/var/run/secrets/kubernetes.io/serviceaccount",
      );
    });

    it('labels sysprep disks unattendCD and requires an answer file', async () => {
      const good = new PathMap(
        Object.fromEntries([
          await mounted('/var/run/kubevirt-private/sysprep/sp', { 'Autounattend.xml': '<x/>' }),
        ]),
      );
      const v = vmi([{ name: 'sp', sysprep: { configMap: { name: 'answers' } } }]);
      const r = await new VolumePreparer({ paths, pathMap: good }).prepare(v);
      expect(r.created).toEqual([join(paths.configDiskDir, 'sysprep-disks', 'sp.iso')]);
      expect(isoLabel(r.created[0])).toBe('unattendCD');
      const bad = new PathMap(
        Object.fromEntries([await mounted('/var/run/kubevirt-private/sysprep/sp2', { 'readme.txt': '' })]),
      );
      await expect(
        new VolumePreparer({ paths, pathMap: bad }).prepare(
          vmi([{ name: 'sp2', sysprep: { secret: { name: 's' } } }]),
        ),
      ).rejects.toThrow(
        'spec.volumes[0].sysprep: the volume holds neither autounattend.xml nor unattend.xml',
      );
    });

    it('reads cloud-init userDataSecretRef and networkDataSecretRef from the mounted secret keys', async () => {
      const [, udata] = await mounted('/unused', { userdata: '#cloud-config\nhostname: from-secret\n' });
      const [, ndata] = await mounted('/unused', { networkData: 'version: 2\n' });
      const map = new PathMap({
        '/var/run/kubevirt-private/secret/ci/userdata': join(udata, 'userdata'),
        '/var/run/kubevirt-private/secret/ci/userData': join(udata, 'userData'),
        '/var/run/kubevirt-private/secret/ci/networkdata': join(ndata, 'networkdata'),
        '/var/run/kubevirt-private/secret/ci/networkData': join(ndata, 'networkData'),
      });
      const p = { ...paths, cloudInitDir: join(dir, 'ci-nocloud') };
      const v = vmi([
        {
          name: 'ci',
          cloudInitNoCloud: { secretRef: { name: 'ud' }, networkDataSecretRef: { name: 'nd' } },
        },
      ]);
      const r = await new VolumePreparer({ paths: p, pathMap: map }).prepare(v);
      const iso = join(p.cloudInitDir, 'ns1', 'vm1', 'noCloud.iso');
      expect(r.created).toEqual([iso]);
      expect(isoLabel(iso)).toBe('cidata');
      expect(isoCat(iso, '/user-data', dir)).toBe('#cloud-config\nhostname: from-secret\n');
      expect(isoCat(iso, '/network-config', dir)).toBe('version: 2\n');

      const cd = { ...paths, cloudInitDir: join(dir, 'ci-configdrive') };
      const missing = vmi([{ name: 'ci', cloudInitConfigDrive: { secretRef: { name: 'ud' } } }]);
      await expect(
        new VolumePreparer({ paths: cd, pathMap: new PathMap({}) }).prepare(missing),
      ).rejects.toThrow(
        /spec\.volumes\[0\]\.cloudInitConfigDrive\.secretRef: secret 'ud' has no userdata key/,
      );
      const ok = await new VolumePreparer({ paths: cd, pathMap: map }).prepare(missing);
      expect(isoCat(ok.created[0], '/openstack/latest/user_data', dir)).toBe(
        '#cloud-config\nhostname: from-secret\n',
      );
    });
  });
});
