/**
 * The aggregated `upload.cdi.kubevirt.io/v1beta1` API (CDI's cdi-apiserver serves it
 * upstream; here virt-api does, behind its own APIService): discovery, and `create` of an
 * UploadTokenRequest, which is not stored: the answer carries `status.token`, an upload
 * token for the named PVC (common/upload-token.ts) signed with the install's signer key.
 * The API server's RBAC checks `create uploadtokenrequests` before it proxies, and
 * virt-api checks it again for the namespace it signs for.
 */
import { createPrivateKey, type KeyObject, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { isDNS1123Label, isDNS1123Subdomain } from '../../api/validation/names';
import { signUploadToken } from '../common/upload-token';
import { HttpError, RawResponse } from './http-error';

/** The API group and version. */
export const UPLOAD_GROUP = 'upload.cdi.kubevirt.io';
export const UPLOAD_VERSION = 'v1beta1';
const RESOURCE = 'uploadtokenrequests';

/** `GET /apis/upload.cdi.kubevirt.io/v1beta1`. */
export function uploadResourceList(): Record<string, unknown> {
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: `${UPLOAD_GROUP}/${UPLOAD_VERSION}`,
    resources: [
      {
        name: RESOURCE,
        singularName: 'uploadtokenrequest',
        namespaced: true,
        kind: 'UploadTokenRequest',
        verbs: ['create'],
      },
    ],
  };
}

/** `GET /apis/upload.cdi.kubevirt.io`. */
export function uploadApiGroup(): Record<string, unknown> {
  const v = { groupVersion: `${UPLOAD_GROUP}/${UPLOAD_VERSION}`, version: UPLOAD_VERSION };
  return { kind: 'APIGroup', apiVersion: 'v1', name: UPLOAD_GROUP, versions: [v], preferredVersion: v };
}

/** The namespace of `POST /apis/upload.cdi.kubevirt.io/v1beta1/namespaces/{ns}/uploadtokenrequests`, or undefined. */
export function tokenRequestNamespace(segments: string[]): string | undefined {
  const [a, g, v, n, ns, r, ...rest] = segments;
  if (a !== 'apis' || g !== UPLOAD_GROUP || v !== UPLOAD_VERSION || n !== 'namespaces' || r !== RESOURCE)
    return undefined;
  return rest.length === 0 && ns ? ns : undefined;
}

/** Answers a create: the request with its name, namespace and `status.token`; 400 naming the field on a bad body. */
export function createUploadToken(
  signer: KeyObject | undefined,
  namespace: string,
  body: unknown,
  now = new Date(),
): RawResponse {
  if (!signer)
    throw new HttpError(503, 'upload tokens are not configured (virt-api has no --upload-token-signer-key)');
  const req = (typeof body === 'object' && body !== null ? body : {}) as {
    apiVersion?: unknown;
    kind?: unknown;
    metadata?: { name?: unknown; generateName?: unknown; namespace?: unknown };
    spec?: { pvcName?: unknown };
  };
  if (req.kind !== undefined && req.kind !== 'UploadTokenRequest')
    throw new HttpError(400, `kind: ${JSON.stringify(req.kind)} is not UploadTokenRequest`);
  if (req.metadata?.namespace !== undefined && req.metadata.namespace !== namespace)
    throw new HttpError(
      400,
      `metadata.namespace: ${JSON.stringify(req.metadata.namespace)} is not ${namespace}`,
    );
  const pvc = req.spec?.pvcName;
  if (typeof pvc !== 'string' || pvc === '')
    throw new HttpError(400, 'UploadTokenRequest: spec.pvcName: Required value');
  const problems = isDNS1123Subdomain(pvc);
  if (problems.length)
    throw new HttpError(400, `UploadTokenRequest: spec.pvcName: Invalid value: ${problems.join('; ')}`);
  const gen = typeof req.metadata?.generateName === 'string' ? req.metadata.generateName : '';
  const name =
    typeof req.metadata?.name === 'string' && req.metadata.name
      ? req.metadata.name
      : `${gen || 'token-'}${randomBytes(3).toString('hex').slice(0, 5)}`;
  const answer = {
    apiVersion: `${UPLOAD_GROUP}/${UPLOAD_VERSION}`,
    kind: 'UploadTokenRequest',
    metadata: { name, namespace, creationTimestamp: now.toISOString().replace(/\.\d+Z$/, 'Z') },
    spec: { pvcName: pvc },
    status: { token: signUploadToken(signer, namespace, pvc, now) },
  };
  return new RawResponse('application/json', Buffer.from(JSON.stringify(answer)), 201);
}

/** What serving the group needs from virt-api. */
export interface UploadApiDeps {
  /** Throws (403) unless the caller may create UploadTokenRequests in the namespace. */
  authorizeCreate(namespace: string): Promise<void>;
  body(): Promise<unknown>;
  /** The signer's private key (PEM file, read per request, so a renewed key applies). */
  signerKeyFile?: string;
}

/** Serves a request under `/apis/upload.cdi.kubevirt.io`. */
export async function serveUploadApi(
  method: string,
  parsed: { path: string; segments: string[] },
  d: UploadApiDeps,
): Promise<unknown> {
  const base = `/apis/${UPLOAD_GROUP}`;
  if (method === 'GET') {
    if (parsed.path === base) return uploadApiGroup();
    if (parsed.path === `${base}/${UPLOAD_VERSION}`) return uploadResourceList();
  }
  const ns = tokenRequestNamespace(parsed.segments);
  if (!ns || isDNS1123Label(ns).length)
    throw new HttpError(
      404,
      `the server could not find the requested resource (${parsed.path.slice(0, 200)})`,
    );
  if (method !== 'POST') throw new HttpError(405, `${RESOURCE}: only create (POST) is served`);
  await d.authorizeCreate(ns);
  const signer = d.signerKeyFile ? createPrivateKey(await readFile(d.signerKeyFile, 'utf8')) : undefined;
  return createUploadToken(signer, ns, await d.body());
}
