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

const repoRoot = path.resolve(import.meta.dirname, '../..');

/** The directory the suites look in: the env var when set, else ../shared/kubevirt. */
export function upstreamCandidate(): string {
  const fromEnv = process.env.KUBEVIRT_TS_UPSTREAM_DIR;
  return fromEnv ? path.resolve(fromEnv) : path.resolve(repoRoot, '../shared/kubevirt');
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

/**
 * The suffix every upstream suite's name carries, so a skipped one says what it needs.
 * Use as `describe.skipIf(noUpstream)(`upstream examples ${needsUpstream}`, ...)`.
 */
export const needsUpstream =
  "(needs upstream KubeVirt's swagger.json and examples/: set KUBEVIRT_TS_UPSTREAM_DIR or place them at ../shared/kubevirt)";

if (noUpstream) {
  console.warn(`skipping upstream-compatibility suites: no swagger.json and examples/ in ${upstreamCandidate()}`);
}
