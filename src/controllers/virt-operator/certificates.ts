/**
 * X.509 for the install: a self-signed CA and the leaf certificates it signs (virt-api's
 * serving pair, which the webhooks and the APIService trust through the CA bundle;
 * virt-handler's server and client pairs for its mTLS with virt-api). node:crypto cannot
 * build certificates, so they are made with `@peculiar/x509` (pure JS over WebCrypto):
 * no openssl binary is needed in the operator's image. Keys are ECDSA P-256.
 */
import { createPrivateKey, randomBytes, webcrypto } from 'node:crypto';
// @peculiar/x509 resolves its ASN.1 codecs through tsyringe, which needs the Reflect metadata API.
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as never);

type Key = webcrypto.CryptoKey;
type KeyPair = webcrypto.CryptoKeyPair;

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;

/** A certificate and its private key, both PEM. */
export interface CertPair {
  cert: string;
  key: string;
}

/** What a leaf certificate is for. */
export interface LeafSpec {
  commonName: string;
  /** DNS names (server certificates). */
  dnsNames?: string[];
  /** IP addresses (a server reached by address: local mode's loopback upload proxy). */
  ipAddresses?: string[];
  usage: 'server' | 'client' | 'both';
}

function serial(): string {
  const b = randomBytes(16);
  b[0] = b[0]! & 0x7f; // positive
  return b.toString('hex');
}

async function keyPem(key: Key): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n?$/, '\n')}-----END PRIVATE KEY-----\n`;
}

async function importKey(pem: string): Promise<Key> {
  const der = createPrivateKey(pem).export({ format: 'der', type: 'pkcs8' });
  return webcrypto.subtle.importKey('pkcs8', der, ALG, true, ['sign']);
}

async function newKeys(): Promise<KeyPair> {
  return webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify']) as Promise<KeyPair>;
}

/** A self-signed CA valid from `now` for `durationMs`. */
export async function createCA(commonName: string, now: Date, durationMs: number): Promise<CertPair> {
  const keys = await newKeys();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: serial(),
    name: `CN=${commonName}`,
    notBefore: new Date(now.getTime() - 60_000),
    notAfter: new Date(now.getTime() + durationMs),
    signingAlgorithm: ALG,
    keys: keys as never,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey as never),
    ],
  });
  return { cert: cert.toString('pem'), key: await keyPem(keys.privateKey) };
}

/** A leaf certificate signed by `ca`, valid from `now` for `durationMs` (never past the CA's end). */
export async function createLeaf(
  ca: CertPair,
  spec: LeafSpec,
  now: Date,
  durationMs: number,
): Promise<CertPair> {
  const caCert = new x509.X509Certificate(ca.cert);
  const keys = await newKeys();
  const notAfter = new Date(Math.min(now.getTime() + durationMs, caCert.notAfter.getTime()));
  const eku =
    spec.usage === 'server'
      ? [x509.ExtendedKeyUsage.serverAuth]
      : spec.usage === 'client'
        ? [x509.ExtendedKeyUsage.clientAuth]
        : [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth];
  const extensions: x509.Extension[] = [
    new x509.BasicConstraintsExtension(false, undefined, true),
    new x509.KeyUsagesExtension(
      x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
      true,
    ),
    new x509.ExtendedKeyUsageExtension(eku, false),
    await x509.AuthorityKeyIdentifierExtension.create(caCert, false),
  ];
  const names = [
    ...(spec.dnsNames ?? []).map((value) => ({ type: 'dns' as const, value })),
    ...(spec.ipAddresses ?? []).map((value) => ({ type: 'ip' as const, value })),
  ];
  if (names.length) extensions.push(new x509.SubjectAlternativeNameExtension(names));
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: serial(),
    subject: `CN=${spec.commonName}`,
    issuer: caCert.subject,
    notBefore: new Date(now.getTime() - 60_000),
    notAfter,
    signingAlgorithm: ALG,
    publicKey: keys.publicKey as never,
    signingKey: (await importKey(ca.key)) as never,
    extensions,
  });
  return { cert: cert.toString('pem'), key: await keyPem(keys.privateKey) };
}

/** Validity, subject, issuer and fingerprint of a PEM certificate. */
export interface CertInfo {
  subject: string;
  issuer: string;
  notBefore: Date;
  notAfter: Date;
  serial: string;
  dnsNames: string[];
}

/** Reads a PEM certificate (the first one of a bundle). */
export function certInfo(pem: string): CertInfo {
  const c = new x509.X509Certificate(pem);
  const san = c.getExtension(x509.SubjectAlternativeNameExtension);
  return {
    subject: c.subject,
    issuer: c.issuer,
    notBefore: c.notBefore,
    notAfter: c.notAfter,
    serial: c.serialNumber,
    dnsNames: san ? san.names.items.filter((n) => n.type === 'dns').map((n) => n.value) : [],
  };
}

/** True when `leafPem` was signed by the CA `caPem`. */
export async function signedBy(leafPem: string, caPem: string): Promise<boolean> {
  const leaf = new x509.X509Certificate(leafPem);
  const ca = new x509.X509Certificate(caPem);
  if (leaf.issuer !== ca.subject) return false;
  return leaf.verify({ publicKey: ca.publicKey, signatureOnly: true });
}

/** The certificates of a PEM bundle, each as PEM. */
export function splitBundle(bundle: string): string[] {
  return (
    bundle
      .match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----\n?/g)
      ?.map((s) => (s.endsWith('\n') ? s : `${s}\n`)) ?? []
  );
}
