/**
 * Upload tokens (CDI's pkg/token): a JWT signed with ES256 by whoever answers
 * UploadTokenRequests (virt-api here, cdi-apiserver upstream) and verified by the upload
 * proxy with the signer's certificate only. The payload names the operation, the PVC and
 * its namespace; it lives five minutes (CDI's), with ten seconds of leeway for clocks.
 */
import { createPrivateKey, createPublicKey, type KeyObject, sign, verify } from 'node:crypto';

/** The issuer CDI's apiserver writes and its proxy expects. */
export const UPLOAD_TOKEN_ISSUER = 'cdi-apiserver';
/** How long a token is good for (CDI's apiserver: 5 minutes). */
export const UPLOAD_TOKEN_TTL_MS = 5 * 60_000;
const LEEWAY_S = 10;

/** What a token grants. */
export interface UploadTokenPayload {
  operation: 'Upload';
  name: string;
  namespace: string;
  resource: { group: string; version: string; resource: string };
}

const b64 = (v: Buffer | string) => Buffer.from(v).toString('base64url');
const HEADER = b64(JSON.stringify({ alg: 'ES256', typ: 'JWT' }));

/** Signs a token for `pvc` in `namespace` with the signer's private key (PEM). */
export function signUploadToken(
  keyPem: string | KeyObject,
  namespace: string,
  pvc: string,
  now = new Date(),
): string {
  const key = typeof keyPem === 'string' ? createPrivateKey(keyPem) : keyPem;
  const iat = Math.floor(now.getTime() / 1000);
  const payload: UploadTokenPayload & Record<string, unknown> = {
    iss: UPLOAD_TOKEN_ISSUER,
    iat,
    nbf: iat,
    exp: iat + UPLOAD_TOKEN_TTL_MS / 1000,
    operation: 'Upload',
    name: pvc,
    namespace,
    resource: { group: '', version: 'v1', resource: 'persistentvolumeclaims' },
  };
  const input = `${HEADER}.${b64(JSON.stringify(payload))}`;
  const sig = sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
  return `${input}.${b64(sig)}`;
}

/** Why a token was refused. */
export class InvalidUploadTokenError extends Error {}

/**
 * The payload of `token` if the signer's certificate (PEM; or a public key) verifies its
 * signature and it is an upload token in force; else InvalidUploadTokenError.
 */
export function verifyUploadToken(
  token: string,
  signerPem: string | KeyObject,
  now = new Date(),
): UploadTokenPayload {
  const parts = token.split('.');
  if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]+$/.test(p)))
    throw new InvalidUploadTokenError('not a JWT');
  const [h, p, s] = parts as [string, string, string];
  let header: { alg?: string };
  let claims: Record<string, unknown>;
  try {
    header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8'));
    claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidUploadTokenError('not a JWT');
  }
  // The algorithm is fixed: a token naming another (`none`, HS256) is refused outright.
  if (header.alg !== 'ES256') throw new InvalidUploadTokenError(`algorithm ${String(header.alg)} refused`);
  const key = typeof signerPem === 'string' ? createPublicKey(signerPem) : signerPem;
  const sig = Buffer.from(s, 'base64url');
  if (
    sig.length !== 64 ||
    !verify('sha256', Buffer.from(`${h}.${p}`), { key, dsaEncoding: 'ieee-p1363' }, sig)
  )
    throw new InvalidUploadTokenError('bad signature');
  const t = Math.floor(now.getTime() / 1000);
  if (claims.iss !== UPLOAD_TOKEN_ISSUER) throw new InvalidUploadTokenError('wrong issuer');
  if (typeof claims.exp !== 'number' || t > claims.exp + LEEWAY_S)
    throw new InvalidUploadTokenError('expired');
  if (typeof claims.nbf === 'number' && t < claims.nbf - LEEWAY_S)
    throw new InvalidUploadTokenError('not yet valid');
  const r = claims.resource as UploadTokenPayload['resource'] | undefined;
  if (
    claims.operation !== 'Upload' ||
    typeof claims.name !== 'string' ||
    !claims.name ||
    typeof claims.namespace !== 'string' ||
    !claims.namespace ||
    r?.resource !== 'persistentvolumeclaims'
  )
    throw new InvalidUploadTokenError('not an upload token for a PVC');
  return { operation: 'Upload', name: claims.name, namespace: claims.namespace, resource: r };
}
