/**
 * Sizes: what CreateVolume's and ControllerExpandVolume's capacity_range turn into.
 * Volumes are whole 4 KiB blocks (loop devices and ext4/XFS blocks), at least 1 MiB, and
 * 1 GiB when the CO gives no size.
 */
import { status } from '@grpc/grpc-js';
import { CsiError } from './errors';
import type { CapacityRange } from './generated/csi/csi';

export const BLOCK = 4096;
export const MIN_VOLUME_BYTES = 1024 * 1024;
export const DEFAULT_VOLUME_BYTES = 1024 ** 3;

function roundUp(n: number, to: number): number {
  return Math.ceil(n / to) * to;
}

/**
 * The size for a capacity range (OUT_OF_RANGE when none fits); `atLeast` is a content
 * source's size, which a volume made from it must hold.
 */
export function sizeFor(field: string, range: CapacityRange | undefined, atLeast = 0): number {
  const required = range?.requiredBytes ?? 0;
  const limit = range?.limitBytes ?? 0;
  if (required < 0 || limit < 0) throw new CsiError(status.OUT_OF_RANGE, `${field}: negative bytes`);
  if (limit && required > limit)
    throw new CsiError(
      status.OUT_OF_RANGE,
      `${field}: required_bytes ${required} exceeds limit_bytes ${limit}`,
    );
  let size = required || (limit ? Math.min(DEFAULT_VOLUME_BYTES, limit) : DEFAULT_VOLUME_BYTES);
  size = roundUp(Math.max(size, MIN_VOLUME_BYTES, atLeast), BLOCK);
  if (limit && size > limit)
    throw new CsiError(
      status.OUT_OF_RANGE,
      `${field}: no size fits: volumes are whole ${BLOCK}-byte blocks of at least ${MIN_VOLUME_BYTES} bytes${atLeast ? ` and hold their source's ${atLeast} bytes` : ''}, limit_bytes is ${limit}`,
    );
  if (!Number.isSafeInteger(size))
    throw new CsiError(status.OUT_OF_RANGE, `${field}: ${size} bytes is too large`);
  return size;
}

/** Whether an existing volume of `size` satisfies `range` (CreateVolume's idempotency). */
export function fits(size: number, range: CapacityRange | undefined): boolean {
  const required = range?.requiredBytes ?? 0;
  const limit = range?.limitBytes ?? 0;
  return size >= required && (!limit || size <= limit);
}
