/**
 * The version this project reports (virt-api's `/version`, `virtctl version`): which
 * KubeVirt release's API it serves, and that it is kubevirt-ts. Upstream's virtctl parses
 * the server's gitVersion as semver and prints a "different from the KubeVirt version
 * running in the cluster" banner on every error unless major and minor equal its own
 * (pkg/virtctl/root.go checkClientServerVersion), so the served release comes first and
 * kubevirt-ts's own version rides in the semver pre-release: `v1.9.0-kubevirt-ts.0.1.0`.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The upstream KubeVirt release whose `kubevirt.io/v1` API (and subresources) this serves. */
export const SERVED_KUBEVIRT_RELEASE = '1.9.0';

/** kubevirt-ts's own version, from its package.json ('unknown' when that is not found). */
export function projectVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: string;
        version?: string;
      };
      if (pkg.name === 'kubevirt-ts' && pkg.version) return pkg.version;
    } catch {}
    dir = dirname(dir);
  }
  return 'unknown';
}

/** The gitVersion reported: `v<served release>-kubevirt-ts.<project version>` (valid semver). */
export function servedGitVersion(project: string = projectVersion()): string {
  // semver pre-release identifiers: [0-9A-Za-z-] separated by dots.
  const safe = project.replace(/[^0-9A-Za-z.-]/g, '-').replace(/^\.+|\.+$/g, '') || 'unknown';
  return `v${SERVED_KUBEVIRT_RELEASE}-kubevirt-ts.${safe}`;
}
