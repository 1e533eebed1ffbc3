import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api';
import { imageDir } from '../../../src/controllers/virt-launcher/image-dirs';
import { VolumePreparer } from '../../../src/controllers/virt-launcher/volume-prep';
import { type ConverterPaths, upstreamPaths } from '../../../src/converter';
import { imageToolsRun } from './image-tools';

const run = imageToolsRun();

function info(file: string): {
  format: string;
  'backing-filename'?: string;
  'backing-filename-format'?: string;
} {
  return JSON.parse(execFileSync('qemu-img', ['info', '--output=json', file], { encoding: 'utf8' }));
}

function vmi(volumes: NonNullable<VirtualMachineInstance['spec']['volumes']>): VirtualMachineInstance {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'vm1', namespace: 'ns1', uid: 'u1' },
    spec: { domain: { devices: {} }, volumes },
  } as VirtualMachineInstance;
}

describe.skipIf(!run)('VolumePreparer', () => {
  let dir: string;
  let root: string;
  let paths: ConverterPaths;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'kvts-volprep-'));
    root = join(dir, 'images');
    // A qcow2 image imported the way `image import` lays it out: <image dir>/disk/<file>.
    const q = join(imageDir(root, 'example.io/guest:1'), 'disk');
    mkdirSync(q, { recursive: true });
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', join(q, 'guest.qcow2'), '16M']);
    // A raw image at a custom path (containerDisk.path).
    const r = join(imageDir(root, 'example.io/raw:1'), 'custom');
    mkdirSync(r, { recursive: true });
    writeFileSync(join(r, 'raw.img'), Buffer.alloc(1024 * 1024));
    paths = { ...upstreamPaths };
    for (const k of Object.keys(paths) as Array<keyof ConverterPaths>) paths[k] = join(dir, 'pod', k);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('creates qcow2 overlays on the detected backing format, once', async () => {
    const prep = new VolumePreparer({ paths, imageRoot: root });
    const v = vmi([
      { name: 'cloudinit', cloudInitNoCloud: { userData: '#cloud-config\n' } },
      { name: 'root', containerDisk: { image: 'example.io/guest:1' } },
      { name: 'data', containerDisk: { image: 'example.io/raw:1', path: '/custom/raw.img' } },
    ]);
    const first = await prep.prepare(v);
    const rootOverlay = join(paths.ephemeralDiskDir, 'root', 'disk.qcow2');
    const dataOverlay = join(paths.ephemeralDiskDir, 'data', 'disk.qcow2');
    const iso = join(paths.cloudInitDir, 'ns1', 'vm1', 'noCloud.iso');
    expect(first.created.sort()).toEqual([dataOverlay, iso, rootOverlay].sort());
    expect(prep.backingFormats).toEqual({ root: 'qcow2', data: 'raw' });

    // Backing files are named by volume index, as the converter's domain refers to them.
    const rootBacking = join(paths.containerDiskDir, 'disk_1.img');
    expect(readlinkSync(rootBacking)).toBe(join(imageDir(root, 'example.io/guest:1'), 'disk', 'guest.qcow2'));
    const ri = info(rootOverlay);
    expect(ri.format).toBe('qcow2');
    expect(ri['backing-filename']).toBe(rootBacking);
    expect(ri['backing-filename-format']).toBe('qcow2');
    const di = info(dataOverlay);
    expect(di['backing-filename']).toBe(join(paths.containerDiskDir, 'disk_2.img'));
    expect(di['backing-filename-format']).toBe('raw');
    expect(statSync(iso).size).toBeGreaterThan(0);

    // A re-sync and a second preparer (launcher restart) keep every file as it is.
    expect((await prep.prepare(v)).created).toEqual([]);
    const before = statSync(rootOverlay).mtimeMs;
    const second = await new VolumePreparer({ paths, imageRoot: root }).prepare(v);
    expect(second.created).toEqual([]);
    expect(statSync(rootOverlay).mtimeMs).toBe(before);
    expect(info(rootOverlay)['backing-filename']).toBe(rootBacking);
  });

  it('names the VMI and the volume when the image is missing', async () => {
    const prep = new VolumePreparer({ paths, imageRoot: root });
    await expect(
      prep.prepare(vmi([{ name: 'root', containerDisk: { image: 'example.io/nope:1' } }])),
    ).rejects.toThrow(
      /VirtualMachineInstance ns1\/vm1: spec\.volumes\[0\]\.containerDisk\.image: 'example\.io\/nope:1' is not in the local image store/,
    );
    // Without an image store (a kubelet node) the launcher waits for the pod's copy
    // instead: container-disk-copy.test.ts.
  });

  it('rejects a containerDisk.path leaving the image and images that are not one disk file', async () => {
    const prep = new VolumePreparer({ paths, imageRoot: root });
    await expect(
      prep.prepare(
        vmi([{ name: 'x', containerDisk: { image: 'example.io/raw:1', path: '../../../../etc/passwd' } }]),
      ),
    ).rejects.toThrow(
      /spec\.volumes\[0\]\.containerDisk\.path: '\.\.\/\.\.\/\.\.\/\.\.\/etc\/passwd' is not a file in image/,
    );
    // The raw image has no /disk/ directory: the path is required.
    await expect(
      prep.prepare(vmi([{ name: 'x', containerDisk: { image: 'example.io/raw:1' } }])),
    ).rejects.toThrow(
      /spec\.volumes\[0\]\.containerDisk\.image: 'example\.io\/raw:1' must hold exactly one file under \/disk\/ \(found 0\)/,
    );
    await expect(
      prep.prepare(vmi([{ name: 'Bad/..', containerDisk: { image: 'example.io/guest:1' } }])),
    ).rejects.toThrow(/spec\.volumes\[0\]\.name: 'Bad\/\.\.' must be a DNS label/);
    expect(existsSync(join(paths.ephemeralDiskDir, 'x'))).toBe(false);
  });

  it('refuses a qcow2 image that has a backing file of its own', async () => {
    const d = join(imageDir(root, 'example.io/chained:1'), 'disk');
    mkdirSync(d, { recursive: true });
    execFileSync('qemu-img', [
      'create',
      '-q',
      '-f',
      'qcow2',
      '-F',
      'raw',
      '-b',
      join(imageDir(root, 'example.io/raw:1'), 'custom', 'raw.img'),
      join(d, 'c.qcow2'),
    ]);
    await expect(
      new VolumePreparer({ paths, imageRoot: root }).prepare(
        vmi([{ name: 'c', containerDisk: { image: 'example.io/chained:1' } }]),
      ),
    ).rejects.toThrow(
      /spec\.volumes\[0\]\.containerDisk\.image: disk image .* has a backing file of its own/,
    );
  });
});
