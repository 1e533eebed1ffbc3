/**
 * The certificates of an install without virt-operator (the plain `manifests/`): the same
 * plan the operator follows (cert-rotation.ts: upstream's `kubevirt-ca` and leaf
 * Secrets, renewed before they end), written to the Secrets and the CA bundle ConfigMap,
 * and the bundle patched into virt-api's APIService and webhook configurations (which the
 * manifests ship without a caBundle). `kubevirt-ts virt-certs` runs {@link keepCertificates}
 * in a loop; each pass is idempotent.
 */
import { AlreadyExistsError, NotFoundError } from '../runtime/errors';
import { ConfigMapType, SecretType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';
import { certDurations } from './cert-config';
import { planCertificates } from './cert-rotation';
import { readCertState } from './cert-state';
import { CA_BUNDLE_HOLDERS } from './components/virt-api-plain';
import { certObjects } from './install-objects';
import {
  APIServiceType,
  MutatingWebhookConfigurationType,
  ValidatingWebhookConfigurationType,
} from './resource-types';

/** What one pass did. */
export interface KeepResult {
  /** Certificates renewed (`kubevirt-ca` for the CA). */
  renewed: string[];
  /** Objects whose caBundle was set, as `Kind/name`. */
  patched: string[];
  /** Objects that do not exist (yet): patched on a later pass. */
  missing: string[];
  nextRenewal: Date;
}

type Data = KubeObject & { data?: Record<string, string> };

/** Creates `obj`, or replaces its data when it differs. */
async function upsert(client: ObjectClient, obj: Data): Promise<void> {
  const type = obj.kind === 'Secret' ? SecretType : ConfigMapType;
  const name = obj.metadata?.name ?? '';
  try {
    await client.create(type, obj);
    return;
  } catch (e) {
    if (!(e instanceof AlreadyExistsError)) throw e;
  }
  const live = await client.get<Data>(type, name, obj.metadata?.namespace);
  if (JSON.stringify(live.data ?? {}) === JSON.stringify(obj.data ?? {})) return;
  await client.update(type, { ...live, data: obj.data });
}

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** Sets `caBundle` on virt-api's APIService and on every webhook of its two configurations. */
async function patchBundles(client: ObjectClient, bundle: string, r: KeepResult): Promise<void> {
  const caBundle = b64(bundle);
  const apply = async (kind: string, fn: () => Promise<unknown>) => {
    try {
      await fn();
      r.patched.push(kind);
    } catch (e) {
      if (e instanceof NotFoundError) r.missing.push(kind);
      else throw e;
    }
  };
  // virt-api's two APIServices: subresources.kubevirt.io and CDI's upload.cdi.kubevirt.io.
  for (const name of [CA_BUNDLE_HOLDERS.apiService, CA_BUNDLE_HOLDERS.uploadApiService])
    await apply(`APIService/${name}`, async () => {
      const live = await client.get<KubeObject & { spec?: { caBundle?: string } }>(APIServiceType, name);
      if (live.spec?.caBundle === caBundle) return;
      await client.patch(APIServiceType, name, { spec: { caBundle } }, { type: 'merge' });
    });
  for (const [type, name] of [
    [MutatingWebhookConfigurationType, CA_BUNDLE_HOLDERS.mutating],
    [ValidatingWebhookConfigurationType, CA_BUNDLE_HOLDERS.validating],
  ] as const) {
    await apply(`${type.kind}/${name}`, async () => {
      type Hooks = KubeObject & { webhooks?: Array<{ clientConfig?: { caBundle?: string } }> };
      const live = await client.get<Hooks>(type, name);
      const hooks = live.webhooks ?? [];
      if (hooks.every((h) => h.clientConfig?.caBundle === caBundle)) return;
      // The whole list with its resourceVersion: a concurrent change is a conflict, not lost.
      await client.update(type, {
        ...live,
        webhooks: hooks.map((h) => ({ ...h, clientConfig: { ...h.clientConfig, caBundle } })),
      });
    });
  }
}

/** One pass: plans the certificates at `now`, writes them, and patches the CA bundles. */
export async function keepCertificates(
  client: ObjectClient,
  namespace: string,
  now: Date,
): Promise<KeepResult> {
  const plan = await planCertificates(
    namespace,
    await readCertState(client, namespace),
    certDurations(undefined),
    now,
  );
  for (const obj of certObjects(namespace, plan)) await upsert(client, obj as Data);
  const r: KeepResult = { renewed: plan.renewed, patched: [], missing: [], nextRenewal: plan.nextRenewal };
  await patchBundles(client, plan.state.bundle, r);
  return r;
}
