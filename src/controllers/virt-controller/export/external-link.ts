/**
 * Where an export is reached from outside the cluster (upstream's links.go,
 * getExternalLinkHostAndCert): the host of the first Ingress in the install namespace
 * whose backend is the `virt-exportproxy` Service, and the certificate that Ingress
 * presents for it, picked from its TLS Secret's `tls.crt` as upstream's
 * findCertByHostName does. External URLs are that host and
 * `/api/export.kubevirt.io/v1/namespaces/<ns>/virtualmachineexports/<name>`, which the
 * proxy maps to the export's own server. Upstream also reads an OpenShift Route to the
 * proxy (and the route CA ConfigMap): there are no Routes here.
 */
import { X509Certificate } from 'node:crypto';
import { type IngressObject, ingressHostFor } from '../../common/ingress';

/** The export proxy's Deployment and Service (upstream's VirtExportProxyName). */
export const EXPORT_PROXY_SERVICE = 'virt-exportproxy';

/** The URL path of an export on the proxy (upstream's externalUrlLinkFormat: always v1). */
export const externalPath = (namespace: string, name: string) =>
  `/api/export.kubevirt.io/v1/namespaces/${namespace}/virtualmachineexports/${name}`;

/** The host and TLS Secret name of the first Ingress leading to the proxy, if any. */
export function exportProxyIngress(
  ingresses: IngressObject[],
): { host: string; tlsSecret?: string } | undefined {
  for (const ing of ingresses) {
    const host = ingressHostFor(ing, EXPORT_PROXY_SERVICE);
    if (!host) continue;
    // Upstream takes the first TLS entry naming a Secret, whatever its hosts.
    const tlsSecret = ing.spec?.tls?.find((t) => t.secretName)?.secretName;
    return tlsSecret ? { host, tlsSecret } : { host };
  }
  return undefined;
}

/** The PEM blocks of a bundle, each parsed; blocks that do not parse are left out. */
function parseBundle(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  const out: X509Certificate[] = [];
  for (const b of blocks) {
    try {
      out.push(new X509Certificate(b));
    } catch {
      // Upstream's ParseCertsPEM fails the whole lookup; one bad block costs only itself here.
    }
  }
  return out;
}

/** The CN of a distinguished name as node prints it (`CN=x\nO=y`). */
const commonName = (dn: string) => /(?:^|\n)CN=([^\n]*)/.exec(dn)?.[1] ?? '';

/** The DNS names of the subjectAltName. */
const altNames = (c: X509Certificate) =>
  (c.subjectAltName ?? '')
    .split(', ')
    .filter((n) => n.startsWith('DNS:'))
    .map((n) => n.slice(4));

/** `name` is `host` or the wildcard of its parent domain (upstream's matchesOrWildCard). */
function matches(host: string, name: string): boolean {
  const dot = host.indexOf('.');
  const domain = dot === -1 ? host : host.slice(dot + 1);
  return name === host || name === `*.${domain}`;
}

const validAt = (c: X509Certificate, now: Date) => new Date(c.validFrom) < now && new Date(c.validTo) > now;

/**
 * The certificate to report for `host` from a bundle (upstream's findCertByHostName): the
 * matching certificate (its CN or a DNS name is the host or its wildcard) that ends last,
 * if valid now, followed by its issuer chain looked up by the issuer's CN; else every
 * certificate of the bundle valid now; else empty.
 */
export function certForHost(host: string, bundle: string, now: Date): string {
  return findCert(host, parseBundle(bundle), now);
}

function findCert(host: string, certs: X509Certificate[], now: Date): string {
  let best: X509Certificate | undefined;
  for (const c of certs) {
    if (!matches(host, commonName(c.subject)) && !altNames(c).some((n) => matches(host, n))) continue;
    if (!best || (new Date(c.validTo) > new Date(best.validTo) && new Date(c.validFrom) < now)) best = c;
  }
  if (best && validAt(best, now)) {
    let pem = best.toString().trim();
    const issuer = commonName(best.issuer);
    // Not self-issued: append its issuer's chain (empty when the bundle lacks it).
    if (issuer !== commonName(best.subject) && !best.ca) {
      const chain = findCert(issuer, certs, now);
      if (chain) pem += `\n${chain}`;
    }
    return pem;
  }
  return certs
    .filter((c) => validAt(c, now))
    .map((c) => c.toString().trim())
    .join('\n');
}
