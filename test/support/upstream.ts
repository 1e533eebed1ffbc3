/**
 * Where upstream KubeVirt's reference files are, for the upstream-compatibility suites.
 *
 * Upstream's swagger.json and examples/ are inputs the project is checked against, not
 * part of it: a plain clone does not have them. They are found at
 * `$KUBEVIRT_TS_UPSTREAM_DIR` (a directory holding swagger.json and examples/) or else at
 * `<repo>/../shared/kubevirt`. Where neither exists the suites that need them skip, even
 * under KUBEVIRT_TS_REQUIRE_INTEGRATION=1: they are optional compatibility checks, not
 * pieces the host setup provides.
 */
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'vitest';

const repoRoot = path.resolve(import.meta.dirname, '../..');

/**
 * Where a compatibility suite's reference input `name` (upstream's `kubevirt`, CDI's `cdi`)
 * is looked for: `$<envVar>` when set, else `../shared/<name>` beside the clone. The one
 * place that names that folder.
 */
export function referenceInputDir(envVar: string, name: string): string {
  const fromEnv = process.env[envVar];
  return fromEnv ? path.resolve(fromEnv) : path.resolve(repoRoot, '..', 'shared', name);
}

/** How a skipped suite says where to put reference input `name` (`sub` below it). */
export function referenceInputHint(envVar: string, name: string, sub = ''): string {
  return `set ${envVar} or place them at ../shared/${name}${sub}`;
}

/** The directory the suites look in: the env var when set, else ../shared/kubevirt. */
export function upstreamCandidate(): string {
  return referenceInputDir('KUBEVIRT_TS_UPSTREAM_DIR', 'kubevirt');
}

function isDir(p: string): boolean {
  return existsSync(p) && statSync(p).isDirectory();
}

/** Upstream's directory when it holds both swagger.json and examples/, else undefined. */
export function upstreamDir(): string | undefined {
  const dir = upstreamCandidate();
  return existsSync(path.join(dir, 'swagger.json')) && isDir(path.join(dir, 'examples')) ? dir : undefined;
}

/** Upstream's examples/ folder, or undefined. */
export function upstreamExamplesDir(): string | undefined {
  const dir = upstreamDir();
  return dir && path.join(dir, 'examples');
}

/** Upstream's swagger.json, or undefined. */
export function upstreamSwaggerPath(): string | undefined {
  const dir = upstreamDir();
  return dir && path.join(dir, 'swagger.json');
}

/** True when the upstream suites must skip. */
export const noUpstream = upstreamDir() === undefined;

/** The suffix every upstream suite's name carries, so a skipped one says what it needs. */
export const needsUpstream = `(needs upstream KubeVirt's swagger.json and examples/: ${referenceInputHint('KUBEVIRT_TS_UPSTREAM_DIR', 'kubevirt')})`;

/** Upstream's files, as the suites get them. */
export interface Upstream {
  dir: string;
  examplesDir: string;
  swaggerPath: string;
}

/**
 * An upstream-compatibility suite: `fn` declares its tests with upstream's paths where the
 * files are present; elsewhere the suite is reported skipped, its name saying what it needs.
 */
export function describeUpstream(name: string, fn: (upstream: Upstream) => void): void {
  const dir = upstreamDir();
  const title = `${name} ${needsUpstream}`;
  if (dir) {
    describe(title, () =>
      fn({ dir, examplesDir: path.join(dir, 'examples'), swaggerPath: path.join(dir, 'swagger.json') }),
    );
  } else {
    describe.skip(title, () => {
      it("runs where upstream KubeVirt's files are present", () => {});
    });
  }
}

if (noUpstream) {
  console.warn(
    `skipping upstream-compatibility suites: no swagger.json and examples/ in ${upstreamCandidate()}`,
  );
}
