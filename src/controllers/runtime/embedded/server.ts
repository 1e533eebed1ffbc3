/**
 * Serves an `EmbeddedStore` to other processes over a unix socket, with the Kubernetes REST
 * paths (`/api/v1/namespaces/{ns}/pods/{name}`, `/apis/{group}/{version}/...`, `/status`
 * subresource, `?watch=1` streams), so local mode's launcher processes and the CLI reach
 * it with `KubeClient.fromSocket(path)` (or any Kubernetes client that can dial a socket).
 * The socket is created mode 0600: only its owner may talk to it. Reading and routing a
 * request is ./rest-request.
 */
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { ApiError, badRequest, invalid, type Status } from '../errors';
import type { DeleteOptions, KubeObject } from '../types';
import { listenOwnerOnly } from './owner-socket';
import { intParam, parseJson, parsePatch, patchTypes, type Route, readBody, route } from './rest-request';
import type { EmbeddedStore } from './store';
import { SERVING } from './store-rules';
import { metadataShapeCauses } from './validation';

export { MAX_BODY_DEPTH } from './rest-request';

/** Unread watch output after which a slow watcher is cut off. */
const MAX_WATCH_BUFFER = 16 * 1024 * 1024;

/** A running `serveEmbeddedStore`: the socket it listens on, and how to stop it. */
export interface EmbeddedServer {
  readonly socketPath: string;
  /** Stops accepting requests and ends open watches. */
  close(): Promise<void>;
}

/** Starts serving `store` on `socketPath` (a stale socket file left by a dead server is replaced). */
export async function serveEmbeddedStore(store: EmbeddedStore, socketPath: string): Promise<EmbeddedServer> {
  await removeStaleSocket(socketPath);
  const watches = new Set<() => void>();
  const server = http.createServer((req, res) => {
    // A client that hangs up mid-request (or is cut off after a 413) is not our error.
    req.on('error', () => {});
    res.on('error', () => {});
    handle(store, req, res, watches).catch((err) => sendError(res, err));
  });
  server.keepAliveTimeout = 60_000;
  await listenOwnerOnly(server, socketPath);
  return {
    socketPath,
    close: async () => {
      for (const stop of [...watches]) stop();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      fs.rmSync(socketPath, { force: true });
    },
  };
}

async function removeStaleSocket(socketPath: string): Promise<void> {
  if (!fs.existsSync(socketPath)) return;
  const alive = await new Promise<boolean>((resolve) => {
    const c = net.connect(socketPath);
    c.once('connect', () => {
      c.destroy();
      resolve(true);
    });
    c.once('error', () => resolve(false));
  });
  if (alive) throw new Error(`${socketPath} is in use by a running server; stop it or pick another path`);
  fs.rmSync(socketPath, { force: true });
}

function send(res: http.ServerResponse, code: number, body: unknown): void {
  const data = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) });
  res.end(data);
}

function sendError(res: http.ServerResponse, err: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const status: Status =
    err instanceof ApiError
      ? err.toStatus()
      : {
          apiVersion: 'v1',
          kind: 'Status',
          status: 'Failure',
          code: 500,
          reason: 'InternalError',
          message: String((err as Error)?.message ?? err),
        };
  send(res, status.code ?? 500, status);
}

async function handle(
  store: EmbeddedStore,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  watches: Set<() => void>,
): Promise<void> {
  const rawUrl = req.url ?? '/';
  const qAt = rawUrl.indexOf('?');
  // Only the query goes through URL parsing: the path is routed raw (see pathSegments).
  const rawPath = qAt < 0 ? rawUrl : rawUrl.slice(0, qAt);
  const q = new URLSearchParams(qAt < 0 ? '' : rawUrl.slice(qAt + 1));
  const url = { pathname: rawPath };
  if (['/healthz', '/readyz', '/livez'].includes(url.pathname)) {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ok');
    return;
  }
  if (url.pathname === '/version') {
    send(res, 200, {
      major: '1',
      minor: '0',
      gitVersion: 'v1.0.0-kubevirt-ts-embedded',
      platform: `${process.platform}/${process.arch}`,
    });
    return;
  }
  const r = route(store, rawPath);
  const method = req.method ?? 'GET';
  const dryRun = q.get('dryRun') === 'All';
  const fieldManager = q.get('fieldManager') ?? undefined;

  if (method === 'GET' && !r.name) {
    const listOpts = {
      namespace: r.namespace,
      labelSelector: q.get('labelSelector') ?? undefined,
      fieldSelector: q.get('fieldSelector') ?? undefined,
    };
    if (q.get('watch') === '1' || q.get('watch') === 'true') {
      await serveWatch(store, r, q, listOpts, req, res, watches);
      return;
    }
    const limit = intParam(q, 'limit') ?? 0;
    send(
      res,
      200,
      await store.list(r.type, {
        ...listOpts,
        limit: limit > 0 ? limit : undefined,
        continue: q.get('continue') ?? undefined,
        [SERVING]: true,
      }),
    );
    return;
  }
  if (method === 'GET') {
    send(res, 200, await store.get(r.type, r.name!, r.namespace, { [SERVING]: true }));
    return;
  }
  const text = await readBody(req);
  if (method === 'POST' && !r.name) {
    const obj = parseJson(text, 'create') as KubeObject;
    const ns = checkNamespace(r, obj);
    const created = await store.create(
      r.type,
      { ...obj, metadata: { ...obj.metadata, namespace: ns } },
      { dryRun, fieldManager, [SERVING]: true },
    );
    send(res, 201, created);
    return;
  }
  if (!r.name) throw new ApiError(405, 'MethodNotAllowed', `${method} is not supported on a collection`);
  if (method === 'PUT') {
    const obj = parseJson(text, 'update') as KubeObject;
    const ns = checkNamespace(r, obj);
    if (obj.metadata?.name !== r.name) {
      throw badRequest(
        `the name of the object (${obj.metadata?.name}) does not match the name on the URL (${r.name})`,
      );
    }
    const body = { ...obj, metadata: { ...obj.metadata, namespace: ns } };
    const out =
      r.subresource === 'status'
        ? await store.updateStatus(r.type, body, { dryRun, fieldManager, [SERVING]: true })
        : await store.update(r.type, body, { dryRun, fieldManager, [SERVING]: true });
    send(res, 200, out);
    return;
  }
  if (method === 'PATCH') {
    const ct = (req.headers['content-type'] ?? '').split(';')[0].trim();
    const type = patchTypes[ct];
    if (!type)
      throw new ApiError(
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format: ${ct}`,
      );
    const patch = parsePatch(text, type);
    const out = await store.patch(r.type, r.name, patch, {
      type,
      namespace: r.namespace,
      subresource: r.subresource === 'status' ? 'status' : undefined,
      fieldManager,
      force: q.get('force') === 'true',
      dryRun,
      [SERVING]: true,
    });
    send(res, 200, out);
    return;
  }
  if (method === 'DELETE') {
    const opts = (text ? parseJson(text, 'delete') : {}) as DeleteOptions & { dryRun?: unknown };
    const result = await store.delete(r.type, r.name, {
      namespace: r.namespace,
      preconditions: opts.preconditions,
      propagationPolicy:
        opts.propagationPolicy ??
        (q.get('propagationPolicy') as DeleteOptions['propagationPolicy']) ??
        undefined,
      dryRun: dryRun || (Array.isArray(opts.dryRun) && opts.dryRun.includes('All')),
      [SERVING]: true,
    });
    send(res, 200, result.object);
    return;
  }
  throw new ApiError(405, 'MethodNotAllowed', `method ${method} is not supported`);
}

function checkNamespace(r: Route, obj: KubeObject): string | undefined {
  if (!obj || typeof obj !== 'object' || Array.isArray(obj))
    throw badRequest('the body must be a JSON object');
  const shape = metadataShapeCauses(obj);
  if (shape.length) throw invalid(r.type.kind, '', shape);
  if (!r.type.namespaced) return undefined;
  const bodyNs = obj.metadata?.namespace;
  if (bodyNs && r.namespace && bodyNs !== r.namespace) {
    throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
  }
  return r.namespace ?? bodyNs;
}

/**
 * An event's object as JSON, once per object: the store hands every watch of an event the
 * same read-only view, so a write seen by many watches is serialized once.
 */
const serializedObjects = new WeakMap<object, string>();
function serialized(obj: object): string {
  let s = serializedObjects.get(obj);
  if (s === undefined) {
    s = JSON.stringify(obj);
    serializedObjects.set(obj, s);
  }
  return s;
}

async function serveWatch(
  store: EmbeddedStore,
  r: Route,
  q: URLSearchParams,
  listOpts: { namespace?: string; labelSelector?: string; fieldSelector?: string },
  req: http.IncomingMessage,
  res: http.ServerResponse,
  watches: Set<() => void>,
): Promise<void> {
  const timeout = intParam(q, 'timeoutSeconds') ?? 0;
  const handle = await store.watch(
    r.type,
    {
      ...listOpts,
      resourceVersion: q.get('resourceVersion') ?? undefined,
      allowWatchBookmarks: q.get('allowWatchBookmarks') === 'true' || q.get('allowWatchBookmarks') === '1',
      timeoutSeconds: timeout > 0 ? timeout : undefined,
      [SERVING]: true,
    },
    (ev) => {
      if (!res.headersSent)
        res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
      // Events of one event-loop turn (every request it served) go out in one write, not a
      // syscall each: at 10,000 VMs those writes were a third of the store's CPU.
      if (!res.writableCorked) {
        res.cork();
        setImmediate(() => res.uncork());
      }
      res.write(`{"type":${JSON.stringify(ev.type)},"object":${serialized(ev.object)}}\n`);
      // A client that stops reading must not make the server buffer without bound.
      if (res.writableLength > MAX_WATCH_BUFFER) {
        throw new ApiError(
          500,
          'InternalError',
          'watch client too slow: more than 16 MiB of events unread; re-watch',
        );
      }
    },
  );
  if (!res.headersSent)
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
  res.flushHeaders();
  const stop = () => handle.stop();
  watches.add(stop);
  req.on('close', stop);
  const err = await handle.closed;
  watches.delete(stop);
  if (err instanceof ApiError) res.write(`${JSON.stringify({ type: 'ERROR', object: err.toStatus() })}\n`);
  res.end();
}
