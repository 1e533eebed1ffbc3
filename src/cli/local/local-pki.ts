/**
 * Local mode's certificates (`<state>/pki`, 0700): its own CA, which on a cluster is the
 * install's `kubevirt-ca`, and what uploads need from it: the upload pods' serving pairs
 * (an {@link UploadCertIssuer}, as virt-controller's issuer on a cluster), the upload
 * proxy's serving pair for `https://127.0.0.1:<port>` (an IP SAN: virtctl dials the
 * address), its client pair towards the upload servers (CN `client.upload-server.cdi.kubevirt.io`,
 * which they check), and the key the local API signs UploadTokenRequests' tokens with
 * (virt-api's role on a cluster) with the certificate the proxy verifies them by.
 *
 * The CA is kept across starts (upload pods running across a restart of `up` hold
 * certificates it signed) and made again only when near its end; the leaves are issued
 * at each start, so none outlives the CA and a restart renews them.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { UploadCertIssuer } from '../../controllers/cdi-controller/upload-controller';
import { UPLOAD_CLIENT_NAME } from '../../controllers/common/cdi-upload';
import { type CertPair, certInfo, createCA, createLeaf } from '../../controllers/virt-operator/certificates';

const DAY = 86_400_000;
/** The CA lasts ten years and is replaced when a year or less is left. */
const CA_DURATION_MS = 3650 * DAY;
const CA_RENEW_BEFORE_MS = 365 * DAY;
/** The proxy's and signer's pairs: a year (re-issued at every start anyway). */
const LEAF_DURATION_MS = 365 * DAY;

/** The files of the local PKI (PEM). */
export interface LocalPkiFiles {
  caCert: string;
  caKey: string;
  proxyCert: string;
  proxyKey: string;
  proxyClientCert: string;
  proxyClientKey: string;
  signerCert: string;
  signerKey: string;
}

/** The file names under `dir`. */
export function localPkiFiles(dir: string): LocalPkiFiles {
  const f = (n: string) => join(dir, n);
  return {
    caCert: f('ca.crt'),
    caKey: f('ca.key'),
    proxyCert: f('upload-proxy.crt'),
    proxyKey: f('upload-proxy.key'),
    proxyClientCert: f('upload-proxy-client.crt'),
    proxyClientKey: f('upload-proxy-client.key'),
    signerCert: f('upload-token-signer.crt'),
    signerKey: f('upload-token-signer.key'),
  };
}

/** The running local PKI. */
export interface LocalPki {
  files: LocalPkiFiles;
  ca: CertPair;
  /** Serving pairs of upload pods, from the CA (a day, replaced a fifth before their end, as on a cluster). */
  uploadCerts: UploadCertIssuer;
}

function write(file: string, text: string, mode: number): void {
  writeFileSync(file, text, { mode });
}

/** The CA in `files`, when it is there and not near its end. */
function keptCa(files: LocalPkiFiles, now: Date): CertPair | undefined {
  if (!existsSync(files.caCert) || !existsSync(files.caKey)) return undefined;
  const ca = { cert: readFileSync(files.caCert, 'utf8'), key: readFileSync(files.caKey, 'utf8') };
  return certInfo(ca.cert).notAfter.getTime() - now.getTime() > CA_RENEW_BEFORE_MS ? ca : undefined;
}

/** Makes (or reuses) the CA in `dir` and issues the proxy's and signer's pairs. */
export async function ensureLocalPki(dir: string, now = new Date()): Promise<LocalPki> {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const files = localPkiFiles(dir);
  let ca = keptCa(files, now);
  if (!ca) {
    ca = await createCA('kubevirt-ts-local-ca', now, CA_DURATION_MS);
    write(files.caKey, ca.key, 0o600);
    write(files.caCert, ca.cert, 0o644);
  }
  const leaf = (spec: Parameters<typeof createLeaf>[1]) => createLeaf(ca, spec, now, LEAF_DURATION_MS);
  const pairs: Array<[CertPair, string, string]> = [
    [
      await leaf({
        commonName: 'cdi-uploadproxy',
        dnsNames: ['localhost'],
        ipAddresses: ['127.0.0.1'],
        usage: 'server',
      }),
      files.proxyCert,
      files.proxyKey,
    ],
    [
      await leaf({ commonName: UPLOAD_CLIENT_NAME, usage: 'client' }),
      files.proxyClientCert,
      files.proxyClientKey,
    ],
    // Only its key pair matters (ES256 over P-256, as the cluster's signer): the proxy
    // takes the public key from the certificate.
    [
      await leaf({ commonName: 'kubevirt-ts-upload-token-signer', usage: 'client' }),
      files.signerCert,
      files.signerKey,
    ],
  ];
  for (const [pair, cert, key] of pairs) {
    write(key, pair.key, 0o600);
    write(cert, pair.cert, 0o644);
  }
  const caPair = ca;
  return {
    files,
    ca: caPair,
    uploadCerts: {
      caBundle: async () => caPair.cert,
      issue: (commonName, dnsNames) =>
        createLeaf(caPair, { commonName, dnsNames, usage: 'server' }, new Date(), DAY),
      durationMs: DAY,
      renewBeforeMs: DAY / 5,
    },
  };
}
