/**
 * Checks of every name, ID and host path a CSI request carries, at the boundary: nothing
 * reaches the filesystem unless it has passed here.
 *
 * Volume and snapshot IDs are derived from the CO's name (`v-` or `s-` and 32 hex digits
 * of its SHA-256), so they are safe in paths by construction, and CreateVolume's
 * idempotency by name is a lookup of the one ID a name can have. An ID of any other shape
 * (`..`, slashes, another driver's IDs) names nothing of ours: it is treated as absent.
 */
import { createHash } from 'node:crypto';
import { isAbsolute, normalize } from 'node:path';
import { invalid } from './errors';

/** The CSI spec's recommended bound on names and IDs (128 bytes). */
export const MAX_NAME_BYTES = 128;
/** Host paths (staging and target paths) longer than this are refused (PATH_MAX 4096). */
export const MAX_PATH_BYTES = 4000;

const VOLUME_ID = /^v-[0-9a-f]{32}$/;
const SNAPSHOT_ID = /^s-[0-9a-f]{32}$/;
const NODE_ID = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,126}[A-Za-z0-9])?$/;

function digest(name: string): string {
  return createHash('sha256').update(name, 'utf8').digest('hex').slice(0, 32);
}

/** A CO-given name (CreateVolume's, CreateSnapshot's): present, at most 128 bytes, no control characters. */
export function checkName(field: string, name: string): string {
  if (!name) throw invalid(field, 'is required');
  if (Buffer.byteLength(name, 'utf8') > MAX_NAME_BYTES)
    throw invalid(field, `is longer than ${MAX_NAME_BYTES} bytes`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing them is the point
  if (/[\u0000-\u001f\u007f]/.test(name)) throw invalid(field, 'contains control characters');
  return name;
}

/** The volume ID for a CreateVolume name. */
export function volumeIdFor(name: string): string {
  return `v-${digest(name)}`;
}

/** The snapshot ID for a CreateSnapshot name. */
export function snapshotIdFor(name: string): string {
  return `s-${digest(name)}`;
}

/** Whether `id` has the shape of this driver's volume IDs (and so is safe in a path). */
export function isVolumeId(id: string): boolean {
  return VOLUME_ID.test(id);
}

/** Whether `id` has the shape of this driver's snapshot IDs. */
export function isSnapshotId(id: string): boolean {
  return SNAPSHOT_ID.test(id);
}

/** A required ID field: present and bounded (its shape is checked by the lookup). */
export function checkIdField(field: string, id: string): string {
  if (!id) throw invalid(field, 'is required');
  if (Buffer.byteLength(id, 'utf8') > MAX_NAME_BYTES)
    throw invalid(field, `is longer than ${MAX_NAME_BYTES} bytes`);
  return id;
}

/** A node ID (the driver's own, from --node-id): a hostname-like label. */
export function checkNodeId(field: string, id: string): string {
  if (!NODE_ID.test(id))
    throw invalid(field, `${JSON.stringify(id)} is not a node name (letters, digits, . _ -)`);
  return id;
}

/**
 * A host path the CO hands over (staging or target path): absolute, normalised (no `.`
 * or `..` segment, no doubled slash), bounded, no control characters, and not inside
 * `forbidden` (the pool: a publish there would hand out another volume's files).
 */
export function checkHostPath(field: string, path: string, forbidden?: string): string {
  if (!path) throw invalid(field, 'is required');
  if (Buffer.byteLength(path, 'utf8') > MAX_PATH_BYTES)
    throw invalid(field, `is longer than ${MAX_PATH_BYTES} bytes`);
  // biome-ignore lint/suspicious/noControlCharactersInRegex: refusing them is the point
  if (/[\u0000-\u001f\u007f]/.test(path)) throw invalid(field, 'contains control characters');
  if (!isAbsolute(path)) throw invalid(field, `${JSON.stringify(path)} is not an absolute path`);
  const trimmed = path.length > 1 ? path.replace(/\/+$/, '') : path;
  if (normalize(trimmed) !== trimmed || trimmed.split('/').includes('..'))
    throw invalid(field, `${JSON.stringify(path)} is not a normalised path (no ., .. or //)`);
  if (forbidden && (trimmed === forbidden || trimmed.startsWith(`${forbidden}/`)))
    throw invalid(field, `${JSON.stringify(path)} is inside the storage pool`);
  return trimmed;
}
