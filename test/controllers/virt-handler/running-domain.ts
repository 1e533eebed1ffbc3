/** The launcher's report of a running domain for the handler status tests' VMI ns/v (uid u). */
import type { LauncherDomain } from '../../../src/controllers/launcher-protocol/domain-report';

/** The domain `ns_v` running (booted), with `d` overriding any field. */
export function runningDomain(d: Partial<LauncherDomain> = {}): LauncherDomain {
  return {
    name: 'ns_v',
    uuid: 'x',
    state: 'running',
    reason: 'booted',
    bootId: 'x/1',
    vcpus: 1,
    memoryKiB: 1,
    vmiUid: 'u',
    finished: false,
    ...d,
  };
}
