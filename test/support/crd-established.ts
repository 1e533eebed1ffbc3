import { spawnSync } from 'node:child_process';
import { expect } from 'vitest';
import { crdsDir } from '../../scripts/gen-crds';
import { kubectlPath } from './kube-components';
import { waitFor } from './wait';

/**
 * Waits for a CRD's Established condition with `kubectl wait`, retried: kubectl errors
 * ("<nil> is of the type <nil>") on a CRD whose status has no conditions yet, which a
 * just-applied CRD can be for a moment.
 */
export async function waitForCrdEstablished(
  kubectl: (...args: string[]) => unknown,
  crd: string,
): Promise<void> {
  await waitFor(
    `crd/${crd} Established`,
    () => {
      kubectl('wait', '--for', 'condition=Established', '--timeout=60s', `crd/${crd}`);
      return true;
    },
    120_000,
    1_000,
  );
}

/**
 * `kubectl apply -f` the generated CRDs (scripts/gen-crds) onto the API server of
 * `kubeconfig`, then `kubectl wait` for `crds` (CRD names) Established; each must exit 0.
 */
export function applyCrdsEstablished(kubeconfig: string, crds: string[]): void {
  const kubectl = (...args: string[]) => {
    const r = spawnSync(kubectlPath, ['--kubeconfig', kubeconfig, ...args], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
  };
  kubectl('apply', '-f', crdsDir);
  kubectl('wait', '--for=condition=Established', '--timeout=60s', ...crds.map((c) => `crd/${c}`));
}
