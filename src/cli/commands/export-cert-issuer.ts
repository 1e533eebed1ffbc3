/**
 * The export controller's certificate issuer in virt-controller: serving certificates for
 * exporter pods signed by the install's CA (the `kubevirt-ca` Secret in the KubeVirt
 * namespace, which virt-operator or virt-certs keep), and that CA's bundle (the
 * `kubevirt-ca` ConfigMap's `ca-bundle`) for the export links. Upstream keeps a separate
 * `kubevirt-export-ca`; here the install's one CA signs every server (docs/storage.md).
 * Both are read through the API when needed (cached a minute), so a rotated CA applies.
 */

import type { ObjectClient } from '../../controllers/runtime/types';
import type { ExportCertIssuer } from '../../controllers/virt-controller/export/export-controller';

const DAY = 86_400_000;

/** An issuer reading the CA from `namespace`. */
export async function exportCertIssuer(client: ObjectClient, namespace: string): Promise<ExportCertIssuer> {
  const { ConfigMapType, SecretType } = await import('../../controllers/runtime/resources');
  const { createLeaf } = await import('../../controllers/virt-operator/certificates');
  const { CA_BUNDLE_KEY, CA_NAME } = await import('../../controllers/virt-operator/cert-rotation');
  type Data = { data?: Record<string, string> };
  let cached: { at: number; ca: { cert: string; key: string }; bundle: string } | undefined;
  const load = async () => {
    if (cached && Date.now() - cached.at < 60_000) return cached;
    const secret = await client.get<Data & { metadata?: object }>(SecretType, CA_NAME, namespace);
    const cm = await client.get<Data & { metadata?: object }>(ConfigMapType, CA_NAME, namespace);
    const b = (k: string) => Buffer.from(secret.data?.[k] ?? '', 'base64').toString('utf8');
    const bundle = cm.data?.[CA_BUNDLE_KEY] ?? '';
    if (!b('tls.crt') || !b('tls.key') || !bundle)
      throw new Error(`${namespace}/${CA_NAME}: the CA Secret or its bundle ConfigMap is incomplete`);
    cached = { at: Date.now(), ca: { cert: b('tls.crt'), key: b('tls.key') }, bundle };
    return cached;
  };
  return {
    caBundle: async () => (await load()).bundle,
    issue: async (commonName, dnsNames) =>
      createLeaf((await load()).ca, { commonName, dnsNames, usage: 'server' }, new Date(), DAY),
    // As the install's other server certificates: a day, replaced a fifth before its end.
    durationMs: DAY,
    renewBeforeMs: DAY / 5,
  };
}
