/**
 * The header lines of a DataVolume's `http.secretExtraHeaders`, as CDI's importer reads
 * them: each Secret is mounted in its own directory under the headers directory, and each
 * of its keys (a file) holds one `Name: value` line, sent with every request. A line that
 * is not one header (a CR or LF inside, no name) fails the import naming the Secret's
 * directory and key, so a Secret can never add request lines of its own.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** One header line: a token name, no CR or LF in the value. */
export const HEADER_LINE = /^[A-Za-z0-9-]+:[^\r\n]*$/;

/** The header lines under `dir` (`<dir>/<secret dir>/<key>`), in name order. */
export async function secretHeaderLines(dir: string): Promise<string[]> {
  const lines: string[] = [];
  // A Secret volume's own entries (`..data`, `..2026_...`) start with dots: keys do not.
  const visible = async (d: string) => (await readdir(d)).filter((n) => !n.startsWith('.')).sort();
  for (const secret of await visible(dir)) {
    for (const key of await visible(join(dir, secret))) {
      const line = (await readFile(join(dir, secret, key), 'utf8')).replace(/\r?\n$/, '');
      if (!HEADER_LINE.test(line))
        throw new Error(
          `secretExtraHeaders ${secret}/${key}: the value is not one "Name: value" header line`,
        );
      lines.push(line);
    }
  }
  return lines;
}
