/** Reads the certificate material the install's Secrets and ConfigMap hold now. */
import { NotFoundError } from '../runtime/errors';
import { ConfigMapType, SecretType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';
import { CA_BUNDLE_KEY, CA_NAME, type CertState, leafSpecs } from './cert-rotation';
import type { CertPair } from './certificates';

type WithData = KubeObject & { data?: Record<string, string> };

async function getOrUndefined(client: ObjectClient, type: typeof SecretType, name: string, ns: string) {
  try {
    return await client.get<WithData>(type, name, ns);
  } catch (e) {
    if (e instanceof NotFoundError) return undefined;
    throw e;
  }
}

function pair(s: WithData | undefined): CertPair | undefined {
  const crt = s?.data?.['tls.crt'];
  const key = s?.data?.['tls.key'];
  if (!crt || !key) return undefined;
  return {
    cert: Buffer.from(crt, 'base64').toString('utf8'),
    key: Buffer.from(key, 'base64').toString('utf8'),
  };
}

/** The current CA, bundle and leaf pairs in `namespace` (absent ones undefined). */
export async function readCertState(client: ObjectClient, namespace: string): Promise<CertState> {
  const ca = pair(await getOrUndefined(client, SecretType, CA_NAME, namespace));
  const cm = await getOrUndefined(client, ConfigMapType, CA_NAME, namespace);
  const leaves: CertState['leaves'] = {};
  for (const name of Object.keys(leafSpecs(namespace)))
    leaves[name] = pair(await getOrUndefined(client, SecretType, name, namespace));
  return { ca, bundle: cm?.data?.[CA_BUNDLE_KEY], leaves };
}
