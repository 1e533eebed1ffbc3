/**
 * Authentication of requests the API server's aggregator proxies to virt-api, as every
 * aggregated API server does: the connection carries the front proxy's client certificate
 * (signed by the request-header CA, with a common name in the allowed names), and the
 * user is in the X-Remote-User / X-Remote-Group headers. The settings come from the
 * `kube-system/extension-apiserver-authentication` ConfigMap the API server publishes.
 * Authorization is left to the API server's RBAC, which checked the subresource before
 * proxying (as upstream).
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { ConfigMapType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';

/** The request-header settings. */
export interface RequestHeaderConfig {
  /** PEM bundle of the CA signing front-proxy client certificates. */
  clientCA: string;
  /** Common names allowed; empty means any certificate the CA signed. */
  allowedNames: string[];
  usernameHeaders: string[];
  groupHeaders: string[];
  extraHeaderPrefixes: string[];
}

/** Who a request is from. */
export interface RemoteUser {
  name: string;
  groups: string[];
}

/** A request that is not from the front proxy. */
export class UnauthenticatedError extends Error {}

const list = (v: string | undefined): string[] => {
  if (!v) return [];
  try {
    const parsed = JSON.parse(v) as unknown;
    return Array.isArray(parsed) ? parsed.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
};

/** Reads the settings from the API server's ConfigMap; undefined when it has none. */
export async function loadRequestHeaderConfig(
  client: ObjectClient,
): Promise<RequestHeaderConfig | undefined> {
  const cm = await client.get<KubeObject & { data?: Record<string, string> }>(
    ConfigMapType,
    'extension-apiserver-authentication',
    'kube-system',
  );
  const d = cm.data ?? {};
  if (!d['requestheader-client-ca-file']) return undefined;
  return {
    clientCA: d['requestheader-client-ca-file'],
    allowedNames: list(d['requestheader-allowed-names']),
    usernameHeaders: list(d['requestheader-username-headers']),
    groupHeaders: list(d['requestheader-group-headers']),
    extraHeaderPrefixes: list(d['requestheader-extra-headers-prefix']),
  };
}

/**
 * The user of a proxied request. The TLS server verified the client certificate against
 * the request-header CA (`requestCert`, the CA as `ca`); here its name is checked and the
 * headers read. Throws {@link UnauthenticatedError} otherwise.
 */
export function authenticate(
  // node:http's request or node:http2's (whose socket stands for the session's TLS socket).
  req: { headers: IncomingHttpHeaders; socket: unknown },
  cfg: RequestHeaderConfig,
): RemoteUser {
  const sock = req.socket as TLSSocket;
  // A resumed session that never carried a certificate is `authorized` (OpenSSL verified
  // nothing, so nothing failed): a peer certificate must be there too.
  if (!sock.authorized || !sock.getPeerCertificate()?.raw) {
    throw new UnauthenticatedError(
      `no valid front-proxy client certificate${sock.authorizationError ? ` (${sock.authorizationError})` : ''}`,
    );
  }
  const cn = sock.getPeerCertificate()?.subject?.CN;
  const name = Array.isArray(cn) ? cn[0] : cn;
  if (cfg.allowedNames.length > 0 && (!name || !cfg.allowedNames.includes(name))) {
    throw new UnauthenticatedError(
      `client certificate ${JSON.stringify(name)} is not an allowed front proxy`,
    );
  }
  const header = (h: string) => req.headers[h.toLowerCase()];
  let user: string | undefined;
  for (const h of cfg.usernameHeaders) {
    const v = header(h);
    const s = Array.isArray(v) ? v[0] : v;
    if (s) {
      user = s;
      break;
    }
  }
  if (!user) throw new UnauthenticatedError('no user in the front-proxy headers');
  const groups: string[] = [];
  for (const h of cfg.groupHeaders) {
    const v = header(h);
    for (const g of Array.isArray(v) ? v : v ? [v] : [])
      groups.push(
        ...g
          .split(',')
          .map((x) => x.trim())
          .filter(Boolean),
      );
  }
  return { name: user, groups };
}
