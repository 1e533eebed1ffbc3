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
