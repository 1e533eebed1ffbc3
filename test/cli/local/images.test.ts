import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { VirtualMachine } from '../../../src/api/generated/types';
import {
  checkImageName,
  ImageNotFoundError,
  ImageStore,
  imageReferences,
} from '../../../src/cli/local/images';
import { imageDir } from '../../../src/controllers/virt-launcher/image-dirs';

const vm = (image: string, disk?: string): VirtualMachine => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachine',
  metadata: { name: 'a' },
  spec: {
    template: {
      spec: {
        domain: { devices: {}, firmware: { kernelBoot: { container: { image, kernelPath: '/vmlinuz' } } } },
        volumes: disk ? [{ name: 'd', containerDisk: { image: disk } }] : [],
      },
    },
  },
});

describe('ImageStore', () => {
  it('imports a directory as the image root where the launcher looks for it', () => {
    const root = mkdtempSync(join(tmpdir(), 'kvts-img-'));
    const src = join(root, 'src');
    mkdirSync(src);
    writeFileSync(join(src, 'vmlinuz'), 'kernel');
    const store = new ImageStore(join(root, 'images'));
    const img = store.import('kubevirt-ts/tiny-guest', src);
    expect(img.dir).toBe(imageDir(join(root, 'images'), 'kubevirt-ts/tiny-guest'));
    expect(readFileSync(join(img.dir, 'vmlinuz'), 'utf8')).toBe('kernel');
    expect(store.list().map((i) => i.name)).toEqual(['kubevirt-ts/tiny-guest']);
  });

  it('imports a single file as a containerDisk under /disk/, replacing an older import', () => {
    const root = mkdtempSync(join(tmpdir(), 'kvts-img-'));
    const f = join(root, 'disk.qcow2');
    writeFileSync(f, 'v1');
    const store = new ImageStore(join(root, 'images'));
    store.import('quay.io/x/disk:1', f);
    writeFileSync(f, 'v2');
    const img = store.import('quay.io/x/disk:1', f);
    expect(readFileSync(join(img.dir, 'disk', 'disk.qcow2'), 'utf8')).toBe('v2');
    expect(store.remove('quay.io/x/disk:1')).toBe(true);
    expect(existsSync(img.dir)).toBe(false);
    expect(store.remove('quay.io/x/disk:1')).toBe(false);
  });

  it('rejects names that are not image references and sources that do not exist', () => {
    expect(() => checkImageName('../etc')).toThrow(/container image reference/);
    expect(() => checkImageName('a b')).toThrow(/visible characters/);
    const store = new ImageStore(mkdtempSync(join(tmpdir(), 'kvts-img-')));
    expect(() => store.import('ok/name', '/nonexistent/x')).toThrow(
      '/nonexistent/x: no such file or directory',
    );
  });

  it('names the missing image, its field and the import command', () => {
    const store = new ImageStore(mkdtempSync(join(tmpdir(), 'kvts-img-')));
    expect(imageReferences(vm('k/boot', 'k/disk'))).toEqual([
      { image: 'k/boot', field: 'spec.template.spec.domain.firmware.kernelBoot.container.image' },
      { image: 'k/disk', field: 'spec.template.spec.volumes[0].containerDisk.image' },
    ]);
    let err: unknown;
    try {
      store.checkReferences(vm('k/boot'), 'VirtualMachine/a');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ImageNotFoundError);
    expect((err as Error).message).toBe(
      `VirtualMachine/a.spec.template.spec.domain.firmware.kernelBoot.container.image: image "k/boot" is not in the local image store (${store.root}); registries are not reached in local mode: import it with \`kubevirt-ts image import k/boot <file-or-dir>\``,
    );
  });
});
