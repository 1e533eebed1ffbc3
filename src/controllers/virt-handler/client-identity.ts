/**
 * Who may call virt-handler's REST server: virt-api's client certificate only. The KubeVirt
 * CA signs every component's certificates (the handlers' own serving ones included), so a
 * chain to it is not enough; upstream's handler (pkg/util/tls verifyPeerCert) also requires
 * the clientAuth extended key usage and the common name
 * `kubevirt.io:system:client:virt-handler`, which virt-operator gives the certificate in
 * the `kubevirt-virt-handler-certs` Secret that virt-api mounts.
 */
import type { X509Certificate } from 'node:crypto';

/** Upstream's common name of the client certificate virt-api presents to handlers. */
export const VIRT_API_CLIENT_CN = 'kubevirt.io:system:client:virt-handler';
/** OID of the clientAuth extended key usage. */
const CLIENT_AUTH_OID = '1.3.6.1.5.5.7.3.2';
/** OID of anyExtendedKeyUsage (Go's x509 accepts it for any usage). */
const ANY_EKU_OID = '2.5.29.37.0';

/** The common name of a certificate subject (`CN=...` line of Node's multi-line form). */
export function commonName(subject: string): string | undefined {
  const cns = subject
    .split('\n')
    .filter((l) => l.startsWith('CN='))
    .map((l) => l.slice(3));
  return cns.length === 1 ? cns[0] : undefined;
}

/**
 * Why a (chain-verified) peer certificate is not virt-api's client identity, or undefined
 * when it is. A certificate without an extended key usage extension is valid for any
 * usage, as in Go's verification.
 */
export function clientIdentityRefusal(cert: X509Certificate | undefined): string | undefined {
  if (!cert) return 'no client certificate';
  const cn = commonName(cert.subject);
  if (cn !== VIRT_API_CLIENT_CN)
    return `client certificate common name ${JSON.stringify(cn ?? cert.subject)} is not ${VIRT_API_CLIENT_CN}`;
  const usages = cert.keyUsage;
  if (usages && !usages.includes(CLIENT_AUTH_OID) && !usages.includes(ANY_EKU_OID))
    return `client certificate ${JSON.stringify(cn)} is not for client authentication (extended key usage ${usages.join(', ')})`;
  return undefined;
}
