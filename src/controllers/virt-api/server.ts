/**
 * virt-api: one HTTPS server (TLS only; HTTP/2 with HTTP/1.1 alongside, see
 * ./tls-listener) for the admission webhooks the API server calls and the aggregated
 * `subresources.kubevirt.io` API it proxies. The serving certificate is re-read when its
 * files change; the front proxy's CA comes from the API server's
 * `extension-apiserver-authentication` ConfigMap and is refreshed. The KubeVirt CR's
 * `tlsConfiguration` (minimum version, ciphers) applies to new connections as it changes.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex, Readable } from 'node:stream';
import type { ClusterConfig } from '../../api/config/cluster-config';
import type { VirtualMachine } from '../../api/generated/types';
import { MAX_OBJECT_DEPTH, nestedDeeperThan } from '../../api/json-bounds';
import { servedGitVersion } from '../../api/served-version';
import { readLimitedBody } from '../common/request-body';
import { readTlsFiles, type TlsFiles, type TlsMaterial, watchTlsFiles } from '../common/tls-files';
import { currentTlsProtocol, followTlsProtocol } from '../common/tls-protocol';
import { VirtualMachineInstanceType, VirtualMachineType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';
import {
  type AdmissionRequest,
  admissionResponse,
  BadReviewError,
  MAX_REVIEW_BYTES,
  parseAdmissionReview,
} from './admission-review';
import { type Authorizer, attributesOf, requireAllowed, subjectAccessReviewAuthorizer } from './authorizer';
import { BodyBudget, type BodyBudgetOptions, readBudgetedBody } from './body-budget';
import {
  apiGroup,
  apiGroupList,
  apiResourceList,
  SUBRESOURCE_GROUP,
  SUBRESOURCE_VERSIONS,
  versionInfo,
} from './discovery';
import { evacuateCancel } from './evacuate-cancel';
import {
  authenticate,
  loadRequestHeaderConfig,
  type RemoteUser,
  type RequestHeaderConfig,
  UnauthenticatedError,
} from './front-proxy-auth';
import { HandlerClient, type HandlerClientOptions } from './handler-client';
import { HttpError, RawResponse, sendError, sendJson } from './http-error';
import { isMemoryDumpOperation, memoryDumpRequest } from './memory-dump';
import { type ObjectGraphResource, objectGraph } from './object-graph';
import { logAdmissionRefusal, logSubresource, type ObjectLog, type SubresourceCall } from './request-log';
import { parseRequestPath, type RequestPath, type SubresourceRoute, subresourceRoute } from './request-path';
import { isStream, refuseUpgrade, StreamRelay } from './streams';
import { type AnyRequest, type AnyResponse, createTlsListener } from './tls-listener';
import { serveUploadApi, UPLOAD_GROUP, UPLOAD_VERSION, uploadApiGroup } from './upload-token-request';
import { expandSpec, expandVm, migrateVm, restartVm, startVm, stopVm } from './vm-lifecycle';
import { fetchVmi, fetchVmiForVm, isVmiOperation, vmiOperation } from './vmi-subresources';
import { isVolumeOperation, volumeRequest } from './volume-hotplug';
import { Webhooks } from './webhooks';

/** Options of {@link startVirtApi}. */
export interface VirtApiOptions {
  client: ObjectClient;
  /** Serving certificate and key. */
  tls: Pick<TlsFiles, 'cert' | 'key'>;
  host?: string;
  /** Default 8443, upstream's. */
  port?: number;
  /** The byte budget for webhook bodies being admitted (default DEFAULT_BODY_BUDGET). */
  bodyBudget?: BodyBudgetOptions;
  /** The KubeVirt configuration in force (the webhooks default and validate by it). */
  config: () => ClusterConfig;
  /** KubeVirt's namespace: its service accounts may change VMI specs, its handlers are found there. */
  kubevirtNamespace: string;
  /** How virt-api reaches the handlers (mutual TLS). */
  handler: Omit<HandlerClientOptions, 'client' | 'namespace'>;
  /** Request-header settings; default: read from the API server's ConfigMap. */
  requestHeader?: RequestHeaderConfig;
  /**
   * Who may do a subresource call virt-api is about to make; default: a SubjectAccessReview
   * through `client`, as upstream.
   */
  authorizer?: Authorizer;
  /** Users treated as KubeVirt components besides its service accounts. */
  privilegedUsers?: string[];
  version?: string;
  /** The upload-token signer's private key (PEM file, read per request): UploadTokenRequests are answered with it. */
  uploadTokenSignerKeyFile?: string;
  log?: (m: string) => void;
  /** Lines naming the object of each subresource call and admission refusal (request-log.ts). */
  objectLog?: ObjectLog;
}

/** A running virt-api. */
export interface VirtApi {
  port: number;
  close(): Promise<void>;
}

/** virt-handler's service accounts: upstream's name and kubevirt-ts's install's (node restriction). */
const HANDLER_ACCOUNTS = ['kubevirt-handler', 'virt-handler'];
const COMPONENT_ACCOUNTS = [
  'kubevirt-apiserver',
  'kubevirt-controller',
  'kubevirt-handler',
  'kubevirt-operator',
];
/** The namespaced subresource route of a parsed path, or undefined. */
const routeOf = (p: RequestPath) => subresourceRoute(p.segments, SUBRESOURCE_GROUP, SUBRESOURCE_VERSIONS);

function readBody(req: Readable, limit: number, what: string): Promise<Buffer> {
  return readLimitedBody(req, limit, () => new HttpError(400, `${what} exceeds ${limit} bytes`), 'drain');
}

async function jsonBody(req: Readable): Promise<unknown> {
  const body = await readBody(req, 1 << 20, 'request body');
  if (body.length === 0) return {};
  let value: unknown;
  try {
    value = JSON.parse(body.toString('utf8'));
  } catch (e) {
    throw new HttpError(400, `request body is not JSON: ${(e as Error).message}`);
  }
  if (nestedDeeperThan(value)) {
    throw new HttpError(400, `request body is nested more than ${MAX_OBJECT_DEPTH} levels deep`);
  }
  return value;
}

/** Starts virt-api. */
export async function startVirtApi(o: VirtApiOptions): Promise<VirtApi> {
  const log = o.log ?? (() => {});
  let requestHeader = o.requestHeader ?? (await loadRequestHeaderConfig(o.client).catch(() => undefined));
  let serving: TlsMaterial = readTlsFiles(o.tls);
  // The KubeVirt CR's tlsConfiguration (webhooks and subresources alike), followed live.
  const tlsConfiguration = () => o.config().configuration.tlsConfiguration;
  const contextOptions = () => ({
    cert: serving.cert,
    key: serving.key,
    ...(requestHeader ? { ca: requestHeader.clientCA } : {}),
    ...currentTlsProtocol(tlsConfiguration),
  });
  const bodyBudget = new BodyBudget(o.bodyBudget);
  const handlers = new HandlerClient({ ...o.handler, client: o.client, namespace: o.kubevirtNamespace });
  const relay = new StreamRelay(o.client, handlers);
  const privileged = (r: AdmissionRequest) => {
    const u = r.userInfo.username ?? '';
    if (o.privilegedUsers?.includes(u)) return true;
    return COMPONENT_ACCOUNTS.some((a) => u === `system:serviceaccount:${o.kubevirtNamespace}:${a}`);
  };
  const fromHandler = (r: AdmissionRequest) =>
    HANDLER_ACCOUNTS.some((a) => r.userInfo.username === `system:serviceaccount:${o.kubevirtNamespace}:${a}`);
  const gitVersion = o.version ?? servedGitVersion();
  const authorize = o.authorizer ?? subjectAccessReviewAuthorizer(o.client);
  const authn = (req: AnyRequest): RemoteUser => {
    if (!requestHeader)
      throw new HttpError(
        401,
        'virt-api has no front-proxy configuration (extension-apiserver-authentication)',
      );
    try {
      return authenticate(req as Parameters<typeof authenticate>[0], requestHeader);
    } catch (e) {
      if (e instanceof UnauthenticatedError) throw new HttpError(401, e.message);
      throw e;
    }
  };

  const webhook = async (req: AnyRequest, res: AnyResponse, path: string) => {
    const hook = Webhooks[path];
    if (!hook) throw new HttpError(404, `no webhook at ${path}`);
    if (req.method !== 'POST') throw new HttpError(405, `${req.method} ${path}: use POST`);
    const ct = String(req.headers['content-type'] ?? '');
    if (!ct.startsWith('application/json'))
      throw new HttpError(400, `content-type ${JSON.stringify(ct)}: expected application/json`);
    // The body's bytes stay held in the budget until the answer is sent (body-budget.ts).
    const { body, done } = await readBudgetedBody(req, bodyBudget, MAX_REVIEW_BYTES, 'AdmissionReview');
    try {
      let review: AdmissionRequest;
      try {
        review = parseAdmissionReview(body);
      } catch (e) {
        if (e instanceof BadReviewError) throw new HttpError(400, e.message);
        throw e;
      }
      const outcome = await hook(review, { config: o.config, client: o.client, privileged, fromHandler });
      if (!outcome.allowed && o.objectLog) logAdmissionRefusal(o.objectLog, path, review, outcome.causes);
      sendJson(res, 200, admissionResponse(review.uid, outcome));
    } finally {
      done();
    }
  };

  /** Authenticates the caller and authorises the call on the route virt-api acts on. */
  const authorizeCall = async (req: AnyRequest, route: SubresourceRoute) => {
    const user = authn(req);
    await requireAllowed(authorize, user, attributesOf(route, req.method ?? 'GET', SUBRESOURCE_GROUP));
  };

  const api = async (req: AnyRequest, parsed: RequestPath): Promise<unknown> => {
    const { path, query } = parsed;
    const base = `/apis/${SUBRESOURCE_GROUP}`;
    if (parsed.segments[1] === UPLOAD_GROUP)
      return serveUploadApi(req.method ?? 'GET', parsed, {
        authorizeCreate: async (ns) =>
          requireAllowed(authorize, authn(req), {
            namespace: ns,
            verb: 'create',
            group: UPLOAD_GROUP,
            version: UPLOAD_VERSION,
            resource: 'uploadtokenrequests',
          }),
        body: () => jsonBody(req),
        signerKeyFile: o.uploadTokenSignerKeyFile,
      });
    if (req.method === 'GET') {
      if (path === '/apis') {
        const list = apiGroupList() as { groups: unknown[] };
        return { ...list, groups: [...list.groups, uploadApiGroup()] };
      }
      if (path === base) return apiGroup();
      for (const v of SUBRESOURCE_VERSIONS) {
        if (path === `${base}/${v}`) return apiResourceList(v);
        if (path === `${base}/${v}/version`) return versionInfo(gitVersion);
        if (path === `${base}/${v}/healthz`) return { apiserver: 'ok', restapi: 'ok' };
      }
    }
    const route = routeOf(parsed);
    if (!route)
      throw new HttpError(404, `the server could not find the requested resource (${path.slice(0, 200)})`);
    await authorizeCall(req, route);
    const { namespace: ns, resource: kind } = route;
    const name = route.name ?? '';
    const op = route.subresource ?? '';
    if (kind === 'expand-vm-spec') {
      if (req.method !== 'PUT') throw new HttpError(405, 'expand-vm-spec: use PUT');
      const vm = (await jsonBody(req)) as VirtualMachine & KubeObject;
      if (typeof vm !== 'object' || vm === null || (vm.kind && vm.kind !== 'VirtualMachine')) {
        throw new HttpError(400, 'expand-vm-spec: the body must be a VirtualMachine');
      }
      if (vm.metadata?.namespace && vm.metadata.namespace !== ns) {
        throw new HttpError(400, `expand-vm-spec: metadata.namespace ${vm.metadata.namespace} is not ${ns}`);
      }
      return expandVm(o.client, { ...vm, metadata: { ...vm.metadata, namespace: ns } }, o.config());
    }
    if (op === 'objectgraph') {
      // upstream: GET with an optional ObjectGraphOptions body.
      if (req.method !== 'GET') throw new HttpError(405, 'objectgraph: use GET');
      return objectGraph(o.client, o.config(), kind as ObjectGraphResource, ns, name, await jsonBody(req));
    }
    if (isVolumeOperation(op) && (kind === 'virtualmachines' || kind === 'virtualmachineinstances')) {
      if (req.method !== 'PUT') throw new HttpError(405, `${op}: use PUT`);
      await volumeRequest(o.client, o.config(), kind, ns, name, op, await jsonBody(req));
      // upstream answers 202 Accepted with no body: the change is carried out asynchronously.
      return new RawResponse('application/json', Buffer.alloc(0), 202);
    }
    if (isMemoryDumpOperation(op) && kind === 'virtualmachines') {
      if (req.method !== 'PUT') throw new HttpError(405, `${op}: use PUT`);
      await memoryDumpRequest(o.client, o.config(), ns, name, op, await jsonBody(req));
      return new RawResponse('application/json', Buffer.alloc(0), 202);
    }
    if (op === 'evacuate/cancel') {
      if (req.method !== 'PUT') throw new HttpError(405, 'evacuate/cancel: use PUT');
      const vmi =
        kind === 'virtualmachines'
          ? await fetchVmiForVm(o.client, ns, name)
          : await fetchVmi(o.client, ns, name);
      return evacuateCancel(o.client, o.config(), vmi, await jsonBody(req));
    }
    if (kind === 'virtualmachines') {
      if (op === 'expand-spec') {
        if (req.method !== 'GET') throw new HttpError(405, 'expand-spec: use GET');
        return expandSpec(o.client, ns, name, o.config());
      }
      const fns = { start: startVm, stop: stopVm, restart: restartVm, migrate: migrateVm } as const;
      const fn = fns[op as keyof typeof fns];
      if (!fn) throw new HttpError(404, `subresource ${op} not found`);
      if (req.method !== 'PUT') throw new HttpError(405, `${op}: use PUT`);
      const body = (await jsonBody(req)) as Record<string, unknown>;
      await fn(o.client, ns, name, body);
      return {};
    }
    if (!isVmiOperation(op)) {
      throw new HttpError(
        isStream(op) ? 400 : 404,
        isStream(op) ? `${op} is a websocket: upgrade the connection` : `subresource ${op} not found`,
      );
    }
    const body = req.method === 'PUT' ? await jsonBody(req) : undefined;
    return vmiOperation(o.client, handlers, req.method ?? 'GET', ns, name, op, body, query);
  };

  /** The call a path names (a VM's or VMI's subresource), for its log line. */
  const callOf = (req: AnyRequest, parsed: RequestPath | undefined): SubresourceCall | undefined => {
    const r = parsed && routeOf(parsed);
    if (!r?.name || !r.subresource) return undefined;
    const { resource, namespace, name, subresource } = r;
    return { resource, namespace, name, subresource, method: req.method ?? 'GET' };
  };
  /** Logs the call once it finished, with the object's uid when it exists. */
  const logCall = async (call: SubresourceCall | undefined, error?: unknown) => {
    if (!call || !o.objectLog) return;
    const type = call.resource === 'virtualmachines' ? VirtualMachineType : VirtualMachineInstanceType;
    const uid = await o.client
      .get<KubeObject>(type, call.name, call.namespace)
      .then((obj) => obj.metadata?.uid)
      .catch(() => undefined);
    logSubresource(o.objectLog, { ...call, uid }, error);
  };

  const onRequest = (req: AnyRequest, res: AnyResponse) => {
    let parsed: RequestPath;
    try {
      parsed = parseRequestPath(req.url ?? '/');
    } catch (e) {
      sendError(res, e);
      return;
    }
    const path = parsed.path;
    const call = callOf(req, parsed);
    const work =
      parsed.segments[0] === 'apis'
        ? api(req, parsed).then((b) => {
            if (b instanceof RawResponse) {
              res.writeHead(b.code, { 'content-type': b.contentType, 'content-length': b.body.length });
              res.end(b.body);
            } else sendJson(res, 200, b ?? {});
            void logCall(call);
          })
        : webhook(req, res, path);
    work.catch((e: unknown) => {
      if (!(e instanceof HttpError)) log(`${req.method} ${path}: ${(e as Error).message}`);
      if (!res.headersSent) sendError(res, e);
      void logCall(call, e);
    });
  };
  const onUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    let parsed: RequestPath | undefined;
    (async () => {
      parsed = parseRequestPath(req.url ?? '/');
      const route = routeOf(parsed);
      const sub = route?.subresource ?? '';
      // A VM's only stream is portforward (to its VMI), as upstream's.
      const vmPortForward = route?.resource === 'virtualmachines' && sub.startsWith('portforward/');
      if (
        !route?.name ||
        (!vmPortForward && (route.resource !== 'virtualmachineinstances' || !isStream(sub)))
      )
        throw new HttpError(404, `no stream at ${parsed.path.slice(0, 200)}`);
      await authorizeCall(req, route);
      const serve = vmPortForward ? relay.handleVm.bind(relay) : relay.handle.bind(relay);
      await serve(req, socket, head, route.namespace, route.name, sub);
      // A stream is logged once connected (it may last for hours).
      void logCall(callOf(req, parsed));
    })().catch((e: unknown) => {
      refuseUpgrade(socket, e);
      void logCall(callOf(req, parsed), e);
    });
  };

  const server = createTlsListener(contextOptions(), { request: onRequest, upgrade: onUpgrade });
  const stopWatch = watchTlsFiles(o.tls, (m) => {
    serving = m;
    server.setSecureContext(contextOptions());
    log('serving certificate reloaded');
  });
  const stopTlsFollow = followTlsProtocol(tlsConfiguration, (p) => {
    server.setSecureContext(contextOptions());
    log(`TLS settings now minimum ${p.minVersion}${p.ciphers ? `, ciphers ${p.ciphers}` : ''}`);
  });
  const refresh = o.requestHeader
    ? undefined
    : setInterval(() => {
        loadRequestHeaderConfig(o.client)
          .then((cfg) => {
            if (cfg && JSON.stringify(cfg) !== JSON.stringify(requestHeader)) {
              requestHeader = cfg;
              server.setSecureContext(contextOptions());
            }
          })
          .catch(() => undefined);
      }, 30_000);
  refresh?.unref();

  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.server.listen(o.port ?? 8443, o.host ?? '0.0.0.0', () => resolve());
  });
  const addr = server.server.address();
  return {
    port: typeof addr === 'object' && addr ? addr.port : 0,
    close: async () => {
      stopWatch();
      stopTlsFollow();
      if (refresh) clearInterval(refresh);
      relay.close();
      handlers.close();
      await server.close();
    },
  };
}
