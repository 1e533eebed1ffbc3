/**
 * Boundary checks for user strings that reach the domain XML, a file path or a process
 * argument. The XML encoder escapes markup; these checks reject what escaping cannot make
 * safe or meaningful (control characters, line breaks in one-line values, path tricks)
 * with the VMI field path, before the encoder ever sees the value.
 */

/** Returns why `value` is not a safe single-line string, or undefined when it is. */
export function singleLineProblem(value: string): string | undefined {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 0x0a || c === 0x0d) return 'must be a single line (no line breaks)';
    if (c < 0x20 || c === 0x7f)
      return `must not contain control characters (found U+${c.toString(16).padStart(4, '0').toUpperCase()})`;
    if (c === 0xfffe || c === 0xffff) return 'contains a non-character (U+FFFE/U+FFFF)';
  }
  return undefined;
}

const SEGMENT = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * Returns why `value` cannot be used as one file-name segment (volume, disk, interface
 * names become parts of paths and aliases), or undefined when it can.
 */
export function pathSegmentProblem(value: string): string | undefined {
  if (value.length === 0) return 'must not be empty';
  if (value.length > 253) return 'must be at most 253 characters';
  if (!SEGMENT.test(value) || value === '..') {
    return 'must consist of letters, digits, ".", "_" or "-" and start with a letter or digit';
  }
  return undefined;
}

/** Returns why `value` is not a clean absolute path, or undefined when it is. */
export function absolutePathProblem(value: string): string | undefined {
  const line = singleLineProblem(value);
  if (line) return line;
  if (!value.startsWith('/')) return 'must be an absolute path';
  if (value.split('/').some((s) => s === '..' || s === '.')) return 'must not contain "." or ".." segments';
  return undefined;
}
