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
import { BodyBudget, type BodyBudgetOptions, readBudgetedBody } from './body-budget';
import {
  apiGroup,
  apiGroupList,
  apiResourceList,
  SUBRESOURCE_GROUP,
  SUBRESOURCE_VERSIONS,
  versionInfo,
} from './discovery';
import {
  authenticate,
  loadRequestHeaderConfig,
  type RequestHeaderConfig,
  UnauthenticatedError,
} from './front-proxy-auth';
import { HandlerClient, type HandlerClientOptions } from './handler-client';
import { HttpError, RawResponse, sendError, sendJson } from './http-error';
import { logAdmissionRefusal, logSubresource, type ObjectLog, type SubresourceCall } from './request-log';
import { isStream, refuseUpgrade, StreamRelay } from './streams';
import { type AnyRequest, type AnyResponse, createTlsListener } from './tls-listener';
import { expandSpec, expandVm, migrateVm, restartVm, startVm, stopVm } from './vm-lifecycle';
import { isVmiOperation, vmiOperation } from './vmi-subresources';
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
  /** Users treated as KubeVirt components besides its service accounts. */
  privilegedUsers?: string[];
  version?: string;
  log?: (m: string) => void;
  /** Lines naming the object of each subresource call and admission refusal (request-log.ts). */
  objectLog?: ObjectLog;
}

/** A running virt-api. */
export interface VirtApi {
  port: number;
  close(): Promise<void>;
}

const COMPONENT_ACCOUNTS = [
  'kubevirt-apiserver',
  'kubevirt-controller',
  'kubevirt-handler',
  'kubevirt-operator',
];
const NS_ROUTE = new RegExp(
  `^/apis/${SUBRESOURCE_GROUP.replace(/\./g, '\\.')}/(${SUBRESOURCE_VERSIONS.join('|')})/namespaces/([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)/(?:(virtualmachines|virtualmachineinstances)/([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)/([a-z0-9/-]+)|(expand-vm-spec))$`,
);

function readBody(req: Readable, limit: number, what: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(new HttpError(400, `${what} exceeds ${limit} bytes`));
        req.resume();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
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
  const gitVersion = o.version ?? 'v0.0.0-kubevirt-ts';
  const authn = (req: AnyRequest) => {
    if (!requestHeader)
      throw new HttpError(
        401,
        'virt-api has no front-proxy configuration (extension-apiserver-authentication)',
      );
    try {
      return authenticate(req, requestHeader);
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
      const outcome = await hook(review, { config: o.config, client: o.client, privileged });
      if (!outcome.allowed && o.objectLog) logAdmissionRefusal(o.objectLog, path, review, outcome.causes);
      sendJson(res, 200, admissionResponse(review.uid, outcome));
    } finally {
      done();
    }
  };

  const api = async (req: AnyRequest, path: string, query: URLSearchParams): Promise<unknown> => {
    const base = `/apis/${SUBRESOURCE_GROUP}`;
    if (req.method === 'GET') {
      if (path === '/apis') return apiGroupList();
      if (path === base) return apiGroup();
      for (const v of SUBRESOURCE_VERSIONS) {
        if (path === `${base}/${v}`) return apiResourceList(v);
        if (path === `${base}/${v}/version`) return versionInfo(gitVersion);
        if (path === `${base}/${v}/healthz`) return { apiserver: 'ok', restapi: 'ok' };
      }
    }
    const m = NS_ROUTE.exec(path);
    if (!m)
      throw new HttpError(404, `the server could not find the requested resource (${path.slice(0, 200)})`);
    authn(req);
    const [, , ns, , kind, name, , op, expandNs] = m as unknown as string[];
    if (expandNs) {
      if (req.method !== 'PUT') throw new HttpError(405, 'expand-vm-spec: use PUT');
      const vm = (await jsonBody(req)) as VirtualMachine & KubeObject;
      if (typeof vm !== 'object' || vm === null || (vm.kind && vm.kind !== 'VirtualMachine')) {
        throw new HttpError(400, 'expand-vm-spec: the body must be a VirtualMachine');
      }
      if (vm.metadata?.namespace && vm.metadata.namespace !== ns) {
        throw new HttpError(400, `expand-vm-spec: metadata.namespace ${vm.metadata.namespace} is not ${ns}`);
      }
      return expandVm(o.client, { ...vm, metadata: { ...vm.metadata, namespace: ns } });
    }
    if (kind === 'virtualmachines') {
      if (op === 'expand-spec') {
        if (req.method !== 'GET') throw new HttpError(405, 'expand-spec: use GET');
        return expandSpec(o.client, ns, name);
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
  const callOf = (req: AnyRequest, path: string): SubresourceCall | undefined => {
    const m = NS_ROUTE.exec(path);
    if (!m?.[4]) return undefined;
    return { resource: m[4], namespace: m[2], name: m[5], subresource: m[7], method: req.method ?? 'GET' };
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
    const url = new URL(req.url ?? '/', 'https://virt-api');
    const path = url.pathname;
    const call = callOf(req, path);
    const work = path.startsWith('/apis')
      ? api(req, path, url.searchParams).then((b) => {
          if (b instanceof RawResponse) {
            res.writeHead(200, { 'content-type': b.contentType, 'content-length': b.body.length });
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
    const path = new URL(req.url ?? '/', 'https://virt-api').pathname;
    (async () => {
      const m = NS_ROUTE.exec(path);
      if (m?.[4] !== 'virtualmachineinstances' || !isStream(m[7] ?? ''))
        throw new HttpError(404, `no stream at ${path.slice(0, 200)}`);
      authn(req);
      await relay.handle(req, socket, head, m[2] as string, m[5] as string, m[7] as string);
      // A stream is logged once connected (it may last for hours).
      void logCall(callOf(req, path));
    })().catch((e: unknown) => {
      refuseUpgrade(socket, e);
      void logCall(callOf(req, path), e);
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
