/**
 * The web console's HTTP API, the only paths the browser can reach besides the page and
 * its assets (no open proxy):
 *
 * | method and path | what |
 * |---|---|
 * | `GET /api/info` | where the console acts (`local` or the cluster) and the default namespace |
 * | `GET /api/namespaces` | namespace names |
 * | `GET /api/watch?kind=vm\|vmi&namespace=NS` | server-sent events: the objects, then changes (no namespace: all) |
 * | `GET /api/vms/NS/NAME` | the VM, its VMI, their events and its DataVolumes |
 * | `GET /api/list/KIND?namespace=NS` | VMIs, migrations, DataVolumes or snapshots (`LISTED_KINDS`) |
 * | `GET /api/catalog?namespace=NS` | instance types and preferences for the create form |
 * | `PUT /api/vms/NS/NAME/ACTION` | start, stop, restart, migrate, pause, unpause, softreboot |
 * | `DELETE /api/vms/NS/NAME` | deletes the VM |
 * | `PUT /api/vms/NS/NAME` | replaces the VM (the YAML editor; JSON body, admitted as create) |
 * | `POST /api/vms` | creates a VM (JSON body); refusals are Kubernetes Statuses with field causes |
 * | `GET /api/vms/NS/NAME/screenshot` | the VNC screenshot PNG where served (a cluster's virt-api) |
 * | `GET /api/vms/NS/NAME/usage` | CPU, memory, network and disk I/O over the last minutes (vm-usage.ts) |
 *
 * Errors are the API's own Status objects, passed on as it said them.
 */
import type http from 'node:http';
import type { VirtualMachine } from '../../api/generated/types';
import {
  LISTED_KINDS,
  type ListedKind,
  statusOf,
  type UiBackend,
  VM_ACTIONS,
  type VmAction,
} from './backend';

const NAME = '[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?';
const NS = '[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?';
const VM_PATH = new RegExp(`^/api/vms/(${NS})/(${NAME})(?:/([a-z]+))?$`);
/** A VM manifest is small; this bounds what a request may make the server buffer. */
const MAX_BODY = 1 << 20;

/** Writes a JSON answer. */
export function sendJson(res: http.ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(JSON.stringify(body));
}

function sendError(res: http.ServerResponse, e: unknown): void {
  const { code, body } = statusOf(e);
  sendJson(res, code, body);
}

async function readJson(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > MAX_BODY) throw new HttpFailure(413, `request body over ${MAX_BODY} bytes`);
    chunks.push(c as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch (e) {
    throw new HttpFailure(400, `the body is not JSON: ${(e as Error).message}`);
  }
}

/** An error with the status to answer. */
export class HttpFailure extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** Answers one API request (the session is checked already). */
export async function handleApi(
  backend: UiBackend,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://ui');
  const method = req.method ?? 'GET';
  try {
    if (url.pathname === '/api/info' && method === 'GET') {
      sendJson(res, 200, { where: backend.where, namespace: backend.defaultNamespace });
      return;
    }
    if (url.pathname === '/api/namespaces' && method === 'GET') {
      sendJson(res, 200, { items: await backend.namespaces() });
      return;
    }
    if (url.pathname === '/api/watch' && method === 'GET') {
      await streamWatch(backend, url, req, res);
      return;
    }
    const listed = /^\/api\/list\/([a-z]+)$/.exec(url.pathname);
    if (listed && method === 'GET') {
      const kind = listed[1] as string;
      if (!Object.hasOwn(LISTED_KINDS, kind)) throw new HttpFailure(404, `no list of ${kind}`);
      const items = await backend.list(kind as ListedKind, namespaceParam(url));
      return sendJson(res, 200, { items });
    }
    if (url.pathname === '/api/catalog' && method === 'GET') {
      return sendJson(res, 200, await backend.catalog(namespaceParam(url) ?? backend.defaultNamespace));
    }
    if (url.pathname === '/api/vms' && method === 'POST') {
      const body = (await readJson(req)) as VirtualMachine;
      if (body?.kind !== 'VirtualMachine') throw new HttpFailure(400, 'the body is not a VirtualMachine');
      sendJson(res, 201, await backend.create(body));
      return;
    }
    const m = VM_PATH.exec(url.pathname);
    if (m) {
      const ns = m[1] as string;
      const name = m[3] as string;
      const sub = m[5];
      if (!sub && method === 'GET') return sendJson(res, 200, await backend.details(ns, name));
      if (!sub && method === 'PUT') {
        const body = (await readJson(req)) as VirtualMachine;
        if (body?.kind !== 'VirtualMachine') throw new HttpFailure(400, 'the body is not a VirtualMachine');
        return sendJson(res, 200, await backend.replace(ns, name, body));
      }
      if (!sub && method === 'DELETE') {
        await backend.remove(ns, name);
        return sendJson(res, 200, {});
      }
      if (sub && method === 'PUT' && (VM_ACTIONS as readonly string[]).includes(sub)) {
        await backend.act(ns, name, sub as VmAction);
        return sendJson(res, 200, {});
      }
      if (sub === 'usage' && method === 'GET') return sendJson(res, 200, await backend.usage(ns, name));
      if (sub === 'screenshot' && method === 'GET') {
        const shot = await backend.screenshot(ns, name);
        if (!shot) throw new HttpFailure(404, 'screenshots are served on a cluster with virt-api only');
        res.writeHead(200, { 'content-type': shot.contentType || 'image/png', 'cache-control': 'no-store' });
        res.end(shot.body);
        return;
      }
    }
    throw new HttpFailure(404, `${method} ${url.pathname.slice(0, 200)}: no such path`);
  } catch (e) {
    if (res.headersSent) {
      res.end();
      return;
    }
    if (e instanceof HttpFailure) {
      sendJson(res, e.code, { kind: 'Status', status: 'Failure', code: e.code, message: e.message });
    } else sendError(res, e);
  }
}

/** The `namespace` query parameter (undefined: all), refused unless a DNS label. */
function namespaceParam(url: URL): string | undefined {
  const ns = url.searchParams.get('namespace') || undefined;
  if (ns && !new RegExp(`^${NS}$`).test(ns)) throw new HttpFailure(400, 'namespace is not a DNS label');
  return ns;
}

/** Server-sent events of one watch: `data: {"type":..,"object":..}` lines until the client goes. */
async function streamWatch(
  backend: UiBackend,
  url: URL,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): Promise<void> {
  const kind = url.searchParams.get('kind');
  if (kind !== 'vm' && kind !== 'vmi') throw new HttpFailure(400, 'kind must be vm or vmi');
  const ns = namespaceParam(url);
  const head = () => {
    if (!res.headersSent)
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
  };
  let open = true;
  req.on('close', () => {
    open = false;
  });
  const handle = await backend.watch(
    kind,
    ns,
    (e) => {
      head();
      res.write(`data: ${JSON.stringify({ type: e.type, object: e.object })}\n\n`);
    },
    (err) => {
      // The browser's EventSource reconnects and gets the current objects again.
      head();
      res.write(`event: end\ndata: ${JSON.stringify({ message: err?.message ?? 'watch ended' })}\n\n`);
      res.end();
    },
  );
  head();
  res.write(': watching\n\n');
  if (!open) handle.stop();
  else req.on('close', () => handle.stop());
}
