/** Names a config volume carries onto its ISO image: the volume label and downwardAPI file paths. */
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { Volume } from '../generated/types';

/** An ISO 9660/Joliet volume label the config disk builder writes. */
const CONFIG_DISK_LABEL = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;
/** A file name on the config disk: one plain path segment. */
const CONFIG_DISK_FILE = /^[A-Za-z0-9._-]+$/;

/**
 * Config volumes become ISO images: their `volumeLabel` must be a label the image can
 * carry, and downwardAPI file paths plain file names (`.`, `..` and `/` would leave the
 * disk's root). Refused here, with a field path, rather than when the disk is built.
 */
export function validateConfigDiskNames(p: FieldPath, volume: Volume): FieldError[] {
  const errs: FieldError[] = [];
  for (const kind of ['configMap', 'secret', 'downwardAPI'] as const) {
    const label = (volume[kind] as { volumeLabel?: string } | undefined)?.volumeLabel;
    if (label !== undefined && label !== '' && !CONFIG_DISK_LABEL.test(label)) {
      errs.push(
        fieldError(
          p.child(kind, 'volumeLabel'),
          `${p.child(kind, 'volumeLabel')} ${quoteShort(label)} must be 1 to 32 letters, digits, '_' or '-', starting with a letter or digit`,
        ),
      );
    }
  }
  (volume.downwardAPI?.fields ?? []).forEach((f, j) => {
    const fp = p.child('downwardAPI', 'fields').index(j).child('path');
    const path = f.path ?? '';
    if (!CONFIG_DISK_FILE.test(path) || path === '.' || path === '..') {
      errs.push(
        fieldError(
          fp,
          `${fp} ${quoteShort(path)} must be a plain file name (letters, digits, '.', '_', '-'; not '.' or '..')`,
        ),
      );
    }
  });
  return errs;
}

function quoteShort(s: string): string {
  const q = JSON.stringify(s);
  return q.length > 66 ? `${q.slice(0, 63)}..."` : q;
}
