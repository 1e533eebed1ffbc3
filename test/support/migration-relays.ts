/**
 * virt-handler's migration relays (images/kubevirt-ts/migration-relay.c and
 * migration-tls-relay.c), built by gcc for the tests as the image build does.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const SOURCES = new URL('../../images/kubevirt-ts/', import.meta.url).pathname;

/** A relay built into `dir`: its path, or why it could not be built (the reason a test gives for skipping). */
export interface BuiltRelay {
  path?: string;
  skipReason: string;
}

/** Builds `migration-relay` (plain, splice) or `migration-tls-relay` (OpenSSL, libssl-dev's static libraries). */
export function buildRelay(name: 'migration-relay' | 'migration-tls-relay', dir: string): BuiltRelay {
  const path = join(dir, name);
  const libs = name === 'migration-tls-relay' ? ['-lssl', '-lcrypto'] : ['-pthread'];
  const gcc = spawnSync('gcc', ['-static', '-O2', '-o', path, join(SOURCES, `${name}.c`), ...libs], {
    encoding: 'utf8',
  });
  if (gcc.status === 0) return { path, skipReason: '' };
  return {
    skipReason:
      `gcc could not build ${name}: ${gcc.error?.message ?? gcc.stderr.trim().split('\n').pop()}; ` +
      'waits for gcc and libssl-dev, which scripts/setup-host.sh installs (issue 26: the migration relays)',
  };
}

/** How many processes run the executable at `path` now (argv[0], from /proc). */
export function runningRelays(path: string): number {
  let n = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0')[0] === path) n++;
    } catch {
      // gone meanwhile
    }
  }
  return n;
}
