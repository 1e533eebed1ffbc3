/**
 * virt-exportproxy (upstream's cmd/virt-exportproxy): the one HTTPS endpoint an Ingress
 * exposes for every VirtualMachineExport. A request to
 * `/api/export.kubevirt.io/{v1beta1|v1}/namespaces/{ns}/virtualmachineexports/{name}/{rest}`
 * goes to that export's own server as `/{rest}` (query kept): 400 for another path, 404
 * when the export does not exist, 503 while it is not Ready, 502 when its server cannot be
 * reached. The server's certificate is verified against the install's CA bundle for the
 * Service's DNS name (`{serviceName}.{ns}.svc`). The token header or query parameter passes
 * through untouched: the export server checks it, not the proxy (as upstream's).
 */
import { readFile } from 'node:fs/promises';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { request } from 'node:https';
import { ProxyError } from '../common/proxy-https-server';

/** The proxied path (upstream's proxyPathMatcher). */
const PROXY_PATH =
  /^\/api\/export\.kubevirt\.io\/(v1beta1|v1)\/namespaces\/([^/]+)\/virtualmachineexports\/([^/]+)\/(.*)$/;

/** Upstream's health path (no export, no token). */
export const PROXY_HEALTHZ_PATH = '/healthz';

/** One parsed proxy path. */
export interface ProxyTarget {
  namespace: string;
  name: string;
  /** The path on the export server, with its leading slash. */
  path: string;
}

/** The export a path names and the path on its server; undefined when it is not a proxy path. */
export function parseProxyPath(pathname: string): ProxyTarget | undefined {
  const m = PROXY_PATH.exec(pathname);
  if (!m) return undefined;
  return { namespace: m[2]!, name: m[3]!, path: `/${m[4]!}` };
}

/** Where an export's server is reached, and the name its certificate must carry. */
export interface ExportServerAddress {
  host: string;
  port: number;
  servername: string;
}

/** What the proxy needs to know about the export named by a request. */
export interface ExportLookup {
  /** The export's phase and Service name; undefined when it does not exist. */
  exportStatus(
    namespace: string,
    name: string,
  ): Promise<{ phase?: string; serviceName?: string } | undefined>;
  /** Where Service `namespace/name` is reached on its port 443. */
  resolveService(namespace: string, name: string): Promise<ExportServerAddress>;
}

/** An answer the proxy gives itself. */
export { ProxyError };

/** Hop-by-hop headers (RFC 9110 7.6.1), which a proxy does not forward. */
const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

function endToEnd(h: IncomingHttpHeaders): IncomingHttpHeaders {
  const out: IncomingHttpHeaders = {};
  const named = new Set(
    String(h.connection ?? '')
      .split(',')
      .map((s) => s.trim().toLowerCase()),
  );
  for (const [k, v] of Object.entries(h)) if (!HOP.has(k) && !named.has(k)) out[k] = v;
  return out;
}

export interface ProxyHandlerOptions {
  lookup: ExportLookup;
  /** The CA bundle the export servers' certificates chain to (PEM file, read per request: a rotated CA applies). */
  caBundleFile: string;
  log?: (line: string) => void;
}

/** The request handler: health, path parsing, the export's state, then the forward. */
export function proxyHandler(o: ProxyHandlerOptions) {
  const log = o.log ?? (() => {});
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    // WHATWG parsing resolves `.` and `..` segments (also %2e-encoded) before matching.
    const url = new URL(req.url ?? '/', 'https://proxy');
    if (url.pathname === PROXY_HEALTHZ_PATH) {
      res.writeHead(200).end('OK');
      return;
    }
    const target = parseProxyPath(url.pathname);
    if (!target) throw new ProxyError(400, 'not a VirtualMachineExport path');
    const e = await o.lookup.exportStatus(target.namespace, target.name);
    if (!e) throw new ProxyError(404, `VirtualMachineExport ${target.namespace}/${target.name} not found`);
    if (e.phase !== 'Ready' || !e.serviceName)
      throw new ProxyError(503, `VirtualMachineExport ${target.namespace}/${target.name} is not Ready`);
    const to = await o.lookup.resolveService(target.namespace, e.serviceName);
    const ca = await readFile(o.caBundleFile);
    log(`${req.method} ${target.namespace}/${target.name} ${target.path}`);
    await new Promise<void>((done, fail) => {
      const up = request(
        {
          host: to.host,
          port: to.port,
          servername: to.servername,
          ca,
          minVersion: 'TLSv1.2',
          method: req.method,
          path: `${target.path}${url.search}`,
          headers: { ...endToEnd(req.headers), host: to.servername },
          // One request per connection: nothing idles towards a pod that may go away.
          agent: false,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers));
          answer.pipe(res);
          answer.on('end', () => done());
          answer.on('error', fail);
        },
      );
      up.on('error', (err) => fail(new ProxyError(502, `export server: ${err.message}`)));
      // The client going away ends the request to the server too.
      res.on('close', () => {
        if (!res.writableFinished) up.destroy(new Error('the client went away'));
      });
      req.pipe(up);
    });
  };
}
