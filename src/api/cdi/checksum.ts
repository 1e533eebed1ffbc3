/** A DataVolume http source's `checksum`: `algorithm:hex`, with CDI's algorithms. */

export const CHECKSUM_ALGORITHMS = ['md5', 'sha1', 'sha256', 'sha512'] as const;
const HEX_LENGTH: Record<string, number> = { md5: 32, sha1: 40, sha256: 64, sha512: 128 };

/** The problem with `checksum` in words, or undefined when it is well-formed. */
export function checksumProblem(checksum: string): string | undefined {
  const m = /^([a-z0-9]+):([0-9a-fA-F]+)$/.exec(checksum);
  if (!m) return `${JSON.stringify(checksum)} is not algorithm:hex (e.g. sha256:<64 hex digits>)`;
  const len = HEX_LENGTH[m[1]];
  if (len === undefined)
    return `algorithm ${JSON.stringify(m[1])} is not one of ${CHECKSUM_ALGORITHMS.join(', ')}`;
  if (m[2].length !== len) return `a ${m[1]} checksum has ${len} hex digits, not ${m[2].length}`;
  return undefined;
}
