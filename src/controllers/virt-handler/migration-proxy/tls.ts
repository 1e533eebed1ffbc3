/**
 * Mutual TLS of the migration proxy, as upstream's handler sets it up
 * (kvtls.SetupTLSForVirtHandlerServer / SetupTLSForVirtHandlerClients): the receiving
 * handler serves its node certificate and requires a client certificate from the KubeVirt
 * CA with virt-handler's client identity; the sending handler presents that client
 * certificate and accepts only a server certificate from the same CA with the handlers'
 * node identity (not a host name: nodes are reached by address).
 */
import { X509Certificate } from 'node:crypto';
import type { PeerCertificate, SecureContextOptions } from 'node:tls';
import { clientIdentityRefusal, commonName } from '../client-identity';

/** Upstream's common name of the handlers' serving (node) certificate. */
export const HANDLER_NODE_CN = 'kubevirt.io:system:node:virt-handler';

/** PEM material of one side: its own pair and the CA it trusts. */
export interface MigrationTlsMaterial {
  cert: Buffer | string;
  key: Buffer | string;
  ca: Buffer | string;
}

/** Server options of the receiving side (the target node). */
export function serverTlsOptions(m: MigrationTlsMaterial): SecureContextOptions & {
  requestCert: true;
  rejectUnauthorized: true;
} {
  return { cert: m.cert, key: m.key, ca: m.ca, requestCert: true, rejectUnauthorized: true };
}

/** Why the (chain-verified) server certificate is not a handler's node identity, or undefined. */
export function serverCertificateRefusal(cert: X509Certificate): string | undefined {
  const cn = commonName(cert.subject);
  if (cn === HANDLER_NODE_CN) return undefined;
  return `migration target's certificate common name ${JSON.stringify(cn ?? '')} is not ${HANDLER_NODE_CN}`;
}

/** {@link serverCertificateRefusal} for Node's TLS client (checkServerIdentity). */
export function serverIdentityRefusal(cert: PeerCertificate | undefined): Error | undefined {
  const refusal = cert?.raw
    ? serverCertificateRefusal(new X509Certificate(cert.raw))
    : 'no server certificate';
  return refusal ? new Error(refusal) : undefined;
}

/** Client options of the sending side (the source node). */
export function clientTlsOptions(m: MigrationTlsMaterial) {
  return {
    cert: m.cert,
    key: m.key,
    ca: m.ca,
    rejectUnauthorized: true,
    checkServerIdentity: (_host: string, cert: PeerCertificate) => serverIdentityRefusal(cert),
  };
}

export { clientIdentityRefusal };
