/**
 * Integration-test gating. A test that needs a real component (libvirtd, QEMU, the
 * Kubernetes control plane, the test guest) calls `integration(name, available, why)`:
 * where the component is missing it skips with the reason, except under the README's
 * test command (KUBEVIRT_TS_REQUIRE_INTEGRATION=1), where setup must have provided it
 * and a missing component is a failure.
 */
export function integrationRequired(): boolean {
  return process.env.KUBEVIRT_TS_REQUIRE_INTEGRATION === '1';
}

/** Returns true when the test should run; throws when it must run but cannot. */
export function integration(name: string, available: boolean, why: string): boolean {
  if (available) return true;
  if (integrationRequired()) {
    throw new Error(`${name} is required by the test command but unavailable: ${why}`);
  }
  console.warn(`skipping ${name} tests: ${why}`);
  return false;
}

/** Where setup caches heavy builds (Kubernetes binaries, the test guest), outside the clone. */
export const cacheDir = process.env.KUBEVIRT_TS_CACHE ?? '/var/cache/kubevirt-ts';
