/**
 * Mutual TLS of the migration proxy, as upstream's handler sets it up
 * (kvtls.SetupTLSForVirtHandlerServer / SetupTLSForVirtHandlerClients): the receiving
 * handler serves its node certificate and requires a client certificate from the KubeVirt
 * CA with virt-handler's client identity; the sending handler presents that client
 * certificate and accepts only a server certificate from the same CA with the handlers'
 * node identity (not a host name: nodes are reached by address).
 */
import type { PeerCertificate, SecureContextOptions } from 'node:tls';
import { clientIdentityRefusal } from '../client-identity';

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

/** Why the (chain-verified) server certificate is not a handler's, or undefined. */
export function serverIdentityRefusal(cert: PeerCertificate | undefined): Error | undefined {
  const cn = cert?.subject?.CN;
  if (cn === HANDLER_NODE_CN) return undefined;
  return new Error(
    `migration target's certificate common name ${JSON.stringify(cn ?? '')} is not ${HANDLER_NODE_CN}`,
  );
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
