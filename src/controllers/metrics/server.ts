/**
 * The metrics and health server every component mounts (upstream serves /metrics and
 * /healthz on each component's HTTPS port): `GET /metrics` (Prometheus text format from
 * the component's registries), `/healthz` (the process serves), `/readyz` (the
 * component's readiness check). HTTPS when given cert and key files, plain HTTP otherwise
 * (local mode binds loopback only). A scrape never hangs: `collect` runs under a time
 * budget and whatever it gathered by then is served.
 */
import { readFile } from 'node:fs/promises';
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';

/** Something that contributes to `/metrics`. */
export interface MetricsSource {
  /** Refreshes the source's snapshot before a scrape; must give up by `deadline` (ms epoch). */
  collect?(deadline: number): Promise<void>;
  /** Text exposition of the source's registry. */
  text(): Promise<string>;
}

/** Options of {@link serveMetrics}. */
export interface MetricsServerOptions {
  sources: MetricsSource[];
  /** Readiness (`/readyz` answers 200 when true, 503 otherwise). Default: always ready. */
  ready?: () => boolean;
  /** Bind address (default 127.0.0.1) and port (default 0: any free port). */
  host?: string;
  port?: number;
  /** PEM files: serve HTTPS (cluster mode). Both or neither. */
  tls?: { certFile: string; keyFile: string };
  /** Time budget of one scrape's collection (default 5 s; Prometheus's default timeout is 10 s). */
  scrapeBudgetMs?: number;
}

/** A running metrics server. */
export interface MetricsServer {
  /** Base URL, e.g. `http://127.0.0.1:8443`. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

const TEXT_FORMAT = 'text/plain; version=0.0.4; charset=utf-8';

/** Starts the server; resolves once it listens. */
export async function serveMetrics(o: MetricsServerOptions): Promise<MetricsServer> {
  const budget = o.scrapeBudgetMs ?? 5_000;
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (path === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return;
    }
    if (path === '/readyz') {
      const ok = o.ready?.() ?? true;
      res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ok' : 'not ready');
      return;
    }
    if (path === '/metrics') {
      void scrape(o.sources, budget).then(
        (body) => res.writeHead(200, { 'content-type': TEXT_FORMAT }).end(body),
        (err: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(err.message),
      );
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: /metrics, /healthz, /readyz');
  };
  let server: Server;
  if (o.tls) {
    const [cert, key] = await Promise.all([readFile(o.tls.certFile), readFile(o.tls.keyFile)]);
    server = createHttpsServer({ cert, key }, handle);
  } else server = createHttpServer(handle);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, o.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `${o.tls ? 'https' : 'http'}://${host}:${addr.port}`,
    port: addr.port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Collects every source under one deadline, then concatenates their exposition. */
export async function scrape(sources: MetricsSource[], budgetMs: number): Promise<string> {
  const deadline = Date.now() + budgetMs;
  await Promise.all(sources.map((s) => s.collect?.(deadline).catch(() => undefined)));
  const parts = await Promise.all(sources.map((s) => s.text()));
  return parts.join('');
}
