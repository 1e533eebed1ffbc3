/** hostDisk path rules shared by the pod renderer (hostPath volume) and the launcher (the disk file). */

/** Why a hostDisk path cannot become a hostPath volume (absolute, no "." or "..", no control characters, not a directory), or undefined. */
export function hostDiskPathProblem(path: string): string | undefined {
  if (!path) return 'is required';
  if (!path.startsWith('/')) return 'must be an absolute path';
  for (const ch of path) {
    const c = ch.charCodeAt(0);
    if (c < 0x20 || c === 0x7f) return 'must not contain control characters';
  }
  const parts = path.split('/');
  if (parts.some((p) => p === '..' || p === '.')) return 'must not contain "." or ".." segments';
  if (path.endsWith('/')) return 'must name a file, not a directory';
  return undefined;
}
