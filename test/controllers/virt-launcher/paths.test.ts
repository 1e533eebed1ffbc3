import { describe, expect, it } from 'vitest';
import { parseLauncherArgs } from '../../../src/controllers/common/launcher-args';
import { MOUNTS_ENV, PathMap, pathMapFromEnv } from '../../../src/controllers/common/path-map';
import { imageDirName } from '../../../src/controllers/virt-launcher/image-dirs';
import {
  launcherConverterPaths,
  withKernelBootDir,
} from '../../../src/controllers/virt-launcher/launcher-paths';

describe('PathMap', () => {
  const map = new PathMap({
    '/var/run/kubevirt': '/pods/u1/public',
    '/var/run/kubevirt/sockets': '/pods/u1/sockets',
  });

  it('translates by the longest mount prefix and leaves other paths alone', () => {
    expect(map.toHost('/var/run/kubevirt/sockets/launcher-sock')).toBe('/pods/u1/sockets/launcher-sock');
    expect(map.toHost('/var/run/kubevirt/container-disks')).toBe('/pods/u1/public/container-disks');
    expect(map.toHost('/var/run/kubevirt')).toBe('/pods/u1/public');
    expect(map.toHost('/var/run/kubevirtX')).toBe('/var/run/kubevirtX');
    expect(map.toHost('/etc/hosts')).toBe('/etc/hosts');
  });

  it('reads the env var and names it in errors', () => {
    expect(pathMapFromEnv({}).toHost('/a')).toBe('/a');
    expect(pathMapFromEnv({ [MOUNTS_ENV]: '{"/a":"/b"}' }).toHost('/a/x')).toBe('/b/x');
    expect(() => pathMapFromEnv({ [MOUNTS_ENV]: '[1]' })).toThrow(
      /KUBEVIRT_TS_MOUNTS: must be a JSON object/,
    );
    expect(() => pathMapFromEnv({ [MOUNTS_ENV]: '{"/a":1}' })).toThrow(/KUBEVIRT_TS_MOUNTS\["\/a"\]/);
    expect(() => pathMapFromEnv({ [MOUNTS_ENV]: '{"a":"/b"}' })).toThrow(/must be absolute/);
  });
});

describe('image directories', () => {
  it('are one safe path segment per image reference, without collisions', () => {
    expect(imageDirName('kubevirt-ts/tiny-guest:1.0')).toBe('kubevirt-ts_2ftiny-guest_3a1.0');
    expect(imageDirName('a_b')).not.toBe(imageDirName('a/b'));
    expect(imageDirName('..')).not.toBe('..');
    expect(imageDirName('../../etc')).not.toContain('/');
    expect(() => imageDirName('')).toThrow(/empty/);
  });
});

describe('launcher converter paths', () => {
  it('maps upstream paths through the pod mounts and points kernel boot at the image store', () => {
    const args = parseLauncherArgs([
      '--namespace',
      'ns',
      '--name',
      'vm',
      '--uid',
      'u1',
      '--grace-period-seconds',
      '45',
    ]);
    const map = new PathMap({ '/var/run/kubevirt-private': '/pods/u1/private' });
    const paths = launcherConverterPaths(args, map);
    expect(paths.privateDir).toBe('/pods/u1/private');
    expect(paths.pvcDiskDir).toBe('/pods/u1/private/vmi-disks');
    // No mount of the hotplug directory: upstream's path, as the converter's default.
    expect(paths.hotplugDiskDir).toBe('/var/run/kubevirt/hotplug-disks');
    const local = new PathMap({
      '/var/run/kubevirt/hotplug-disks': '/pods/u1/volumes/kubernetes.io~empty-dir/hotplug-disks',
    });
    expect(launcherConverterPaths(args, local).hotplugDiskDir).toBe(
      '/pods/u1/volumes/kubernetes.io~empty-dir/hotplug-disks',
    );
    const vmi = {
      metadata: { name: 'vm' },
      spec: {
        domain: {
          devices: {},
          firmware: { kernelBoot: { container: { image: 'img:1', kernelPath: '/k' } } },
        },
      },
    };
    expect(withKernelBootDir(paths, vmi as never, '/images').kernelBootDir).toBe('/images/img_3a1');
    expect(withKernelBootDir(paths, vmi as never, undefined).kernelBootDir).toBe('');
  });
});
