/**
 * A serving (or client) certificate read from PEM files and re-read when they change, as
 * upstream's components do with their rotated secrets: certificates are mounted from
 * Secrets that virt-operator rotates, so a server must pick up the new pair without a
 * restart. Polling (not fs.watch) because Secret volumes swap a symlink, which inotify
 * watchers of the old file do not see.
 */
import { readFileSync, statSync } from 'node:fs';
import type { SecureContextOptions } from 'node:tls';

/** Paths of a certificate, its key and optionally a CA bundle to trust. */
export interface TlsFiles {
  cert: string;
  key: string;
  /** CA bundle for verifying peers (client certificates on a server, the server on a client). */
  ca?: string;
}

/** The files' current contents. */
export interface TlsMaterial {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
}

/** Reads the files; throws naming the file that cannot be read. */
export function readTlsFiles(files: TlsFiles): TlsMaterial {
  const read = (what: string, path: string) => {
    try {
      return readFileSync(path);
    } catch (e) {
      throw new Error(`${what} ${JSON.stringify(path)}: ${(e as Error).message}`);
    }
  };
  return {
    cert: read('certificate', files.cert),
    key: read('private key', files.key),
    ca: files.ca ? read('CA bundle', files.ca) : undefined,
  };
}

function stamp(files: TlsFiles): string {
  return [files.cert, files.key, files.ca]
    .filter((p): p is string => !!p)
    .map((p) => {
      try {
        const s = statSync(p);
        return `${s.mtimeMs}:${s.size}:${s.ino}`;
      } catch {
        return 'missing';
      }
    })
    .join('|');
}

/**
 * Watches `files` every `intervalMs` and calls `onChange` with the new material when any
 * of them changed and all still read (a half-written rotation is retried next tick).
 * Returns a function that stops watching.
 */
export function watchTlsFiles(
  files: TlsFiles,
  onChange: (m: TlsMaterial) => void,
  opts: { intervalMs?: number; onError?: (e: Error) => void } = {},
): () => void {
  let last = stamp(files);
  const timer = setInterval(() => {
    const now = stamp(files);
    if (now === last) return;
    try {
      const m = readTlsFiles(files);
      onChange(m);
      last = now;
    } catch (e) {
      opts.onError?.(e as Error);
    }
  }, opts.intervalMs ?? 1_000);
  timer.unref();
  return () => clearInterval(timer);
}

/** The material as `tls.createSecureContext` / `https.createServer` options. */
export function secureContextOptions(m: TlsMaterial): SecureContextOptions {
  return m.ca ? { cert: m.cert, key: m.key, ca: m.ca } : { cert: m.cert, key: m.key };
}
