/**
 * The converter's file layout for one launcher: upstream's container paths, translated
 * to host paths through the pod's mounts, with the kernel-boot directory pointing at the
 * kernelBoot container's image in the local image store.
 */
import { basename, dirname } from 'node:path';
import type { VirtualMachineInstance } from '../../api';
import { type ConverterPaths, upstreamPaths } from '../../converter';
import { LAUNCHER_DIRS, type LauncherArgs } from '../common/launcher-args';
import type { PathMap } from '../common/path-map';
import { imageDir } from './image-dirs';

/** The converter paths of a launcher, before the VMI is known. */
export function launcherConverterPaths(args: LauncherArgs, map: PathMap): ConverterPaths {
  const out = {} as ConverterPaths;
  for (const [k, v] of Object.entries(upstreamPaths) as Array<[keyof ConverterPaths, string]>) {
    out[k] = map.toHost(v);
  }
  out.containerDiskDir = map.toHost(args.containerDiskDir);
  // Hotplugged disks: the pod's `hotplug-disks` emptyDir (in a real pod the identity, the
  // converter's default; under the local pod runtime the emptyDir's host directory).
  out.hotplugDiskDir = map.toHost(LAUNCHER_DIRS.hotplugDisks);
  // The local pod runtime maps each block device (`/dev/<volume>`) on its own, to links of
  // the same names in one directory of the pod's: that directory is the devices' one.
  const devices = map
    .entries()
    .filter(
      ([c, h]) =>
        dirname(c) === '/dev' && basename(h) === basename(c) && basename(dirname(h)) === 'volumeDevices',
    );
  if (devices.length) out.blockDeviceDir = dirname(devices[0][1]);
  return out;
}

/**
 * `paths` with `kernelBootDir` set for `vmi`: the image directory of its kernelBoot
 * container under `imageRoot`. Without an image root the container's paths must be host
 * paths already (the directory stays empty).
 */
export function withKernelBootDir(
  paths: ConverterPaths,
  vmi: VirtualMachineInstance,
  imageRoot: string | undefined,
): ConverterPaths {
  const image = vmi.spec?.domain?.firmware?.kernelBoot?.container?.image;
  if (!image) return paths;
  return { ...paths, kernelBootDir: imageRoot ? imageDir(imageRoot, image) : '' };
}
