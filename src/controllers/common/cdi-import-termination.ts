/**
 * The importer's result as the kubelet hands it to the DataVolume controller: the pod's
 * termination message (`/dev/termination-log`), JSON as CDI's importer writes it.
 */
import { writeFileSync } from 'node:fs';

export const TERMINATION_LOG = '/dev/termination-log';
/** CDI's message on success. */
export const IMPORT_COMPLETE = 'Import Complete';

/** What the importer leaves in its termination message. */
export interface ImporterResult {
  message: string;
  /** Bytes of the disk written. */
  diskBytes?: number;
  /** A retry cannot help (a wrong checksum, a refused image): the DataVolume fails. */
  fatal?: boolean;
}

/** Writes the result where the kubelet reads it; absent (not a pod) is fine. */
export function writeTermination(result: ImporterResult, file = TERMINATION_LOG): void {
  try {
    // The kubelet keeps at most 4096 bytes.
    writeFileSync(file, JSON.stringify(result).slice(0, 4000));
  } catch {
    // Outside a pod there is no termination log: the exit code and stderr say it all.
  }
}

/** Reads a termination message back (the controller's side); plain text is taken as the message. */
export function parseTermination(text: string | undefined): ImporterResult | undefined {
  if (!text) return undefined;
  try {
    const o = JSON.parse(text) as ImporterResult;
    if (typeof o.message === 'string') return o;
  } catch {
    // not JSON
  }
  return { message: text.trim() };
}
