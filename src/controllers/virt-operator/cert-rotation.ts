/**
 * Which certificates the install needs, and when each is renewed: upstream's secrets
 * (`kubevirt-ca`, `kubevirt-virt-api-certs`, `kubevirt-virt-handler-certs`,
 * `kubevirt-virt-handler-server-certs`, `kubevirt-controller-certs`) and the `kubevirt-ca` ConfigMap's `ca-bundle`.
 * A CA is renewed `renewBefore` its end; the bundle keeps every earlier CA that has not
 * expired, so clients that still hold the old bundle and servers that still present an
 * old leaf keep working through the overlap. Leaves are renewed `renewBefore` their end
 * and at once when the CA changed. Pure over (existing data, now): no API access.
 */
import type { CertDurations } from './cert-config';
import {
  type CertPair,
  certInfo,
  createCA,
  createLeaf,
  type LeafSpec,
  signedBy,
  splitBundle,
} from './certificates';
import {
  CONTROLLER_CERTS,
  EXPORTPROXY_CERTS,
  HANDLER_SERVER_CERTS,
  UPLOAD_TOKEN_SIGNER,
  UPLOADPROXY_SERVER_CERTS,
  UPLOADSERVER_CLIENT_CERTS,
} from './components/cert-secrets';

/** Name of the CA Secret and the CA bundle ConfigMap. */
export const CA_NAME = 'kubevirt-ca';
/** Key of the bundle in the ConfigMap (upstream's). */
export const CA_BUNDLE_KEY = 'ca-bundle';

export { CONTROLLER_CERTS, HANDLER_SERVER_CERTS } from './components/cert-secrets';

/** The leaf Secrets and what each certificate is for, in `namespace`. */
export function leafSpecs(namespace: string): Record<string, LeafSpec> {
  const svc = (name: string) => [
    name,
    `${name}.${namespace}`,
    `${name}.${namespace}.svc`,
    `${name}.${namespace}.svc.cluster.local`,
  ];
  return {
    'kubevirt-virt-api-certs': {
      commonName: `virt-api.${namespace}.svc`,
      dnsNames: svc('virt-api'),
      usage: 'server',
    },
    'kubevirt-virt-handler-certs': { commonName: 'kubevirt.io:system:client:virt-handler', usage: 'client' },
    [HANDLER_SERVER_CERTS]: {
      commonName: 'kubevirt.io:system:node:virt-handler',
      dnsNames: ['virt-handler'],
      usage: 'server',
    },
    // Its metrics server (upstream's pod DNS name form).
    [CONTROLLER_CERTS]: {
      commonName: 'virt-controller',
      dnsNames: ['virt-controller', `virt-controller.${namespace}.pod.cluster.local`],
      usage: 'server',
    },
    // CDI's upload path: the proxy's serving pair, its client pair for the upload pods
    // (whose own pairs virt-controller issues per pod), and the upload-token signer.
    [UPLOADPROXY_SERVER_CERTS]: {
      commonName: `cdi-uploadproxy.${namespace}.svc`,
      dnsNames: svc('cdi-uploadproxy'),
      usage: 'server',
    },
    [UPLOADSERVER_CLIENT_CERTS]: { commonName: 'client.upload-server.cdi.kubevirt.io', usage: 'client' },
    [UPLOAD_TOKEN_SIGNER]: { commonName: 'kubevirt-ts:upload-token-signer', usage: 'client' },
    // The export proxy's serving pair (its Service's names, upstream's).
    [EXPORTPROXY_CERTS]: {
      commonName: `virt-exportproxy.${namespace}.svc`,
      dnsNames: svc('virt-exportproxy'),
      usage: 'server',
    },
  };
}

/** The certificate material as the Secrets and the ConfigMap hold it (PEM). */
export interface CertState {
  ca?: CertPair;
  /** The ConfigMap's bundle. */
  bundle?: string;
  /** Leaf Secret name -> pair. */
  leaves: Record<string, CertPair | undefined>;
}

/** The outcome: material to write, what changed, and when to look again. */
export interface CertPlan {
  state: Required<Omit<CertState, 'leaves'>> & { leaves: Record<string, CertPair> };
  /** Names renewed in this pass (`kubevirt-ca` for the CA). */
  renewed: string[];
  /** The earliest time a renewal falls due. */
  nextRenewal: Date;
}

function due(pem: string, renewBeforeMs: number, now: Date): number {
  return certInfo(pem).notAfter.getTime() - renewBeforeMs - now.getTime();
}

function valid(pem: string | undefined): pem is string {
  if (!pem) return false;
  try {
    certInfo(pem);
    return true;
  } catch {
    return false;
  }
}

/** Plans the certificates for `namespace` at `now`. */
export async function planCertificates(
  namespace: string,
  existing: CertState,
  d: CertDurations,
  now: Date,
): Promise<CertPlan> {
  const renewed: string[] = [];
  let ca = existing.ca;
  if (!ca || !valid(ca.cert) || due(ca.cert, d.caRenewBefore, now) <= 0) {
    ca = await createCA(`kubevirt.io@${Math.floor(now.getTime() / 1000)}`, now, d.caDuration);
    renewed.push(CA_NAME);
  }
  // The new CA first, then earlier ones still valid (the overlap).
  const older = splitBundle(existing.bundle ?? '').filter(
    (c) => valid(c) && certInfo(c).notAfter > now && c.trim() !== ca!.cert.trim(),
  );
  const bundle = [ca.cert, ...older].map((c) => (c.endsWith('\n') ? c : `${c}\n`)).join('');
  let next = due(ca.cert, d.caRenewBefore, now);
  const leaves: Record<string, CertPair> = {};
  for (const [name, spec] of Object.entries(leafSpecs(namespace))) {
    let leaf = existing.leaves[name];
    const stale =
      !leaf ||
      !valid(leaf.cert) ||
      due(leaf.cert, d.serverRenewBefore, now) <= 0 ||
      !(await signedBy(leaf.cert, ca.cert));
    if (stale) {
      leaf = await createLeaf(ca, spec, now, d.serverDuration);
      renewed.push(name);
    }
    leaves[name] = leaf!;
    next = Math.min(next, due(leaf!.cert, d.serverRenewBefore, now));
  }
  return { state: { ca, bundle, leaves }, renewed, nextRenewal: new Date(now.getTime() + Math.max(next, 0)) };
}
