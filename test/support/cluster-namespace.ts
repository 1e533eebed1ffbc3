/**
 * A cluster test file's namespace: created and ready for pods, and at the file's end
 * deleted and waited for, then its CSI volumes. A teardown timeout is logged, not thrown:
 * the teardown goes on (the driver, the pool, the components) and the file's own
 * assertions have already run.
 */
import type { CoreV1Api } from '@kubernetes/client-node';
import { waitFor } from './wait';

/**
 * Creates namespace `ns` and waits for its `default` ServiceAccount: the ServiceAccount
 * admission plugin refuses pods until it exists.
 */
export async function createTestNamespace(core: CoreV1Api, ns: string): Promise<void> {
  await core.createNamespace({ body: { metadata: { name: ns } } });
  await waitFor(
    'default service account',
    () => core.readNamespacedServiceAccount({ name: 'default', namespace: ns }),
    60_000,
    200,
  );
}

/** Deletes namespace `ns` and waits up to `goneMs` for it to be gone. */
export async function deleteNamespaceAndWait(core: CoreV1Api, ns: string, goneMs: number): Promise<void> {
  await core.deleteNamespace({ name: ns }).catch(() => undefined);
  await waitFor(
    'the namespace gone',
    async () => !(await core.readNamespace({ name: ns }).catch(() => undefined)),
    goneMs,
    500,
  ).catch((e) => console.error(String(e)));
}

/**
 * Waits up to `ms` for no PersistentVolume of CSI driver `driver` to be left (deleted by
 * the provisioner's DeleteVolume); on a timeout logs `logs()` (the sidecars') with it.
 */
export async function waitForDriverPvsDeleted(
  core: CoreV1Api,
  driver: string,
  ms: number,
  logs: () => string | undefined,
): Promise<void> {
  await waitFor(
    'the PVs deleted',
    async () => !(await core.listPersistentVolume()).items.some((pv) => pv.spec?.csi?.driver === driver),
    ms,
    500,
  ).catch((e) => console.error(`${e}\n${logs()}`));
}
