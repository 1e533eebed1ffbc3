/**
 * hostDisk volumes (upstream pkg/host-disk): type `Disk` needs an existing image file;
 * `DiskOrCreate` creates a sparse raw file of the volume's capacity (and its directory)
 * when there is none, refusing when the filesystem lacks the space. The launcher reaches
 * the file where the pod mounts the disk's directory (`<private>/vmi-disks/<volume>/`),
 * through the pod's path map; the domain names the host path itself.
 */
import { mkdir, open, stat, statfs } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { VirtualMachineInstance } from '../../api';
import { hostDiskPathProblem } from '../common/host-disk-path';
import type { PathMap } from '../common/path-map';
import { parseQuantity, quantityValue } from '../common/quantity';
import { mountedDiskDir } from './volume-sources';

/** The launcher's (host) path of hostDisk volume `name` whose file is `path`. */
export function mountedHostDiskPath(map: PathMap, name: string, path: string): string {
  return map.toHost(`${mountedDiskDir(name)}/${basename(path)}`);
}

/**
 * Checks or creates hostDisk volume `i` of `vmi`; returns the file when it was created
 * now. Errors name the volume's field path and the file.
 */
export async function prepareHostDisk(
  vmi: VirtualMachineInstance,
  i: number,
  map: PathMap,
): Promise<string | undefined> {
  const vol = vmi.spec.volumes![i];
  const hd = vol.hostDisk!;
  const field = `spec.volumes[${i}].hostDisk`;
  const problem = hostDiskPathProblem(hd.path);
  if (problem) throw new Error(`${field}.path: ${JSON.stringify(hd.path)} ${problem}`);
  const file = mountedHostDiskPath(map, vol.name, hd.path);
  const st = await stat(file).catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return undefined;
    throw e;
  });
  if (st) {
    if (!st.isFile() && !st.isBlockDevice())
      throw new Error(`${field}.path: ${JSON.stringify(hd.path)} exists but is not a file`);
    return undefined;
  }
  if (hd.type === 'Disk')
    throw new Error(
      `${field}.path: ${JSON.stringify(hd.path)} does not exist (volume '${vol.name}' has type Disk, which needs an existing disk image; type DiskOrCreate creates one)`,
    );
  if (hd.type !== 'DiskOrCreate')
    throw new Error(`${field}.type: ${JSON.stringify(hd.type ?? '')} is not Disk or DiskOrCreate`);
  if (hd.capacity === undefined || hd.capacity === '')
    throw new Error(
      `${field}.capacity: is required to create ${JSON.stringify(hd.path)} (type DiskOrCreate)`,
    );
  const size = quantityValue(parseQuantity(hd.capacity, `${field}.capacity`));
  if (size <= 0n) throw new Error(`${field}.capacity: ${JSON.stringify(hd.capacity)} must be positive`);
  const dir = dirname(file);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const fs = await statfs(dir);
  const available = BigInt(fs.bavail) * BigInt(fs.bsize);
  if (size > available)
    throw new Error(
      `${field}.capacity: cannot create ${JSON.stringify(hd.path)}: ${size} bytes requested, ${available} available`,
    );
  // A sparse raw file: no blocks written until the guest writes them.
  const fh = await open(file, 'wx', 0o660);
  try {
    await fh.truncate(Number(size));
  } finally {
    await fh.close();
  }
  return file;
}
