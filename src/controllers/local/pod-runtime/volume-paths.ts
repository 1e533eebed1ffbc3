/**
 * The rules for paths that come from the API and become files on this host: payload file
 * paths inside a volume, hostPath paths; and how errors quote them.
 */

const SEGMENT = /^[-._A-Za-z0-9]+$/;

/** Quotes a string for an error message: control characters and quotes escaped. */
export function quoted(s: string): string {
  return JSON.stringify(s);
}

/**
 * Why `p` cannot be a file path inside a volume (kubelet's rules, stricter on characters:
 * relative, segments of letters, digits, `-`, `_`, `.`, no `.`/`..` segment, the first not
 * starting with `..`), or undefined when it can.
 */
export function payloadPathProblem(p: string): string | undefined {
  if (p.length === 0) return 'must not be empty';
  if (p.length > 4096) return 'must be at most 4096 characters';
  if (p.startsWith('/')) return 'must be a relative path';
  const parts = p.split('/');
  for (const s of parts) {
    if (s === '' || s === '.' || s === '..') return 'must not contain empty, "." or ".." segments';
    if (s.length > 255) return 'has a segment longer than 255 characters';
    if (!SEGMENT.test(s)) return 'may only contain letters, digits, "-", "_", "." and "/"';
  }
  if (parts[0].startsWith('..')) return 'must not start with ".."';
  return undefined;
}

/** Why `p` cannot be a hostPath volume path (absolute, clean, no control characters), or undefined. */
export function hostPathProblem(p: string): string | undefined {
  if (!p.startsWith('/')) return 'must be an absolute path';
  for (const ch of p) {
    const c = ch.charCodeAt(0);
    if (c < 0x20 || c === 0x7f) return 'must not contain control characters';
  }
  if (p.split('/').some((s) => s === '.' || s === '..')) return 'must not contain "." or ".." segments';
  return undefined;
}
