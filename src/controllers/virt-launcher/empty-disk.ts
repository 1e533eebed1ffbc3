/**
 * emptyDisk volumes: a fresh qcow2 image of the volume's capacity (rounded down to whole
 * MiB, as upstream's emptydisk package does) in the launcher's empty-disks directory. The
 * directory lives in the pod's `libvirt-runtime` emptyDir, so each VMI start (a new pod)
 * gets a new, empty disk; a launcher restarted in the same pod keeps the guest's writes.
 */
import { execFile } from 'node:child_process';
import { lstat, mkdir, rename, rm } from 'node:fs/promises';
import { dirname, isAbsolute, normalize } from 'node:path';
import { promisify } from 'node:util';
import type { VirtualMachineInstance } from '../../api';
import { type ConverterPaths, volumePaths } from '../../converter';
import { parseQuantity, quantityValue } from '../common/quantity';

const run = promisify(execFile);
const MIB = 1024n * 1024n;

/** Bytes of an emptyDisk's capacity rounded down to a whole MiB; throws with the field path when none is left. */
export function emptyDiskBytes(capacity: string | number | undefined, field: string): bigint {
  if (capacity === undefined || capacity === '') throw new Error(`${field}: is required`);
  const bytes = quantityValue(parseQuantity(capacity, field));
  const aligned = bytes - (bytes % MIB);
  if (aligned <= 0n)
    throw new Error(`${field}: ${JSON.stringify(capacity)} is under 1Mi, too small for a disk`);
  return aligned;
}

/**
 * Creates emptyDisk volume `i` of `vmi` unless its image exists; returns the file when
 * it was created now.
 */
export async function prepareEmptyDisk(
  vmi: VirtualMachineInstance,
  i: number,
  paths: ConverterPaths,
  qemuImg = 'qemu-img',
): Promise<string | undefined> {
  const vol = vmi.spec.volumes![i];
  const field = `spec.volumes[${i}].emptyDisk.capacity`;
  const size = emptyDiskBytes(vol.emptyDisk?.capacity, field);
  const file = volumePaths.emptyDisk(paths, vol.name);
  if (!isAbsolute(file) || normalize(file) !== file)
    throw new Error(`spec.volumes[${i}]: launcher path ${file} is not a clean absolute path`);
  if (await lstat(file).catch(() => undefined)) return undefined;
  await mkdir(dirname(file), { recursive: true, mode: 0o755 });
  const tmp = `${file}.tmp-${process.pid}`;
  await rm(tmp, { force: true });
  try {
    // The size is a plain decimal byte count; the file name is an absolute path (never an option).
    await run(qemuImg, ['create', '-q', '-f', 'qcow2', tmp, size.toString()]);
  } catch (e) {
    await rm(tmp, { force: true });
    throw new Error(`spec.volumes[${i}].emptyDisk: qemu-img create ${file}: ${(e as Error).message.trim()}`);
  }
  await rename(tmp, file);
  return file;
}
