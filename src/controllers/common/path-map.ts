/**
 * Container paths to host paths. In a real pod the launcher sees its volumes at their
 * mount paths and the map is empty (identity). Under the local pod runtime there is no
 * mount namespace: the runtime passes the pod's mounts in {@link MOUNTS_ENV} and the
 * launcher translates every directory it was told about (longest mount prefix wins).
 */
import { isAbsolute, normalize } from 'node:path';

/** Env var holding a JSON object `{ "<mountPath>": "<host dir>" }`. */
export const MOUNTS_ENV = 'KUBEVIRT_TS_MOUNTS';

/** Translates container paths to host paths. */
export class PathMap {
  private readonly mounts: Array<[string, string]>;

  constructor(mounts: Record<string, string> = {}) {
    for (const [from, to] of Object.entries(mounts)) {
      if (!isAbsolute(from) || !isAbsolute(to)) {
        throw new Error(
          `${MOUNTS_ENV}: ${JSON.stringify(from)} -> ${JSON.stringify(to)}: both must be absolute`,
        );
      }
    }
    // Longest first, so /var/run/kubevirt/sockets beats /var/run/kubevirt.
    this.mounts = Object.entries(mounts)
      .map(([a, b]) => [normalize(a).replace(/\/$/, ''), normalize(b).replace(/\/$/, '')] as [string, string])
      .sort((a, b) => b[0].length - a[0].length);
  }

  /** The host path of `containerPath` (unchanged when no mount covers it). */
  toHost(containerPath: string): string {
    const p = normalize(containerPath);
    for (const [from, to] of this.mounts) {
      if (p === from) return to;
      if (p.startsWith(`${from}/`)) return to + p.slice(from.length);
    }
    return p;
  }

  /** The mounts, container path to host path. */
  entries(): Array<[string, string]> {
    return [...this.mounts];
  }
}

/** The map in `env[MOUNTS_ENV]`, or the identity map when unset. */
export function pathMapFromEnv(env: NodeJS.ProcessEnv = process.env): PathMap {
  const raw = env[MOUNTS_ENV];
  if (!raw) return new PathMap();
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch (e) {
    throw new Error(`${MOUNTS_ENV}: not JSON: ${(e as Error).message}`);
  }
  if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new Error(`${MOUNTS_ENV}: must be a JSON object of mount path to host path`);
  }
  for (const [k, v] of Object.entries(parsed)) {
    if (typeof v !== 'string') throw new Error(`${MOUNTS_ENV}[${JSON.stringify(k)}]: must be a string`);
  }
  return new PathMap(parsed as Record<string, string>);
}
