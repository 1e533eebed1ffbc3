/**
 * The metrics and health server every component mounts (upstream serves /metrics and
 * /healthz on each component's HTTPS port): `GET /metrics` (Prometheus text format from
 * the component's registries), `/healthz` (the process serves), `/readyz` (the
 * component's readiness check). HTTPS when given cert and key files, plain HTTP otherwise
 * (local mode binds loopback only); the files are re-read when they change (the Secret
 * virt-operator rotates). A scrape never hangs: `collect` runs under a time budget and
 * whatever it gathered by then is served.
 */
import {
  createServer as createHttpServer,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { readTlsFiles, type TlsMaterial, watchTlsFiles } from '../common/tls-files';
import { currentTlsProtocol, followTlsProtocol, type TlsConfigurationSource } from '../common/tls-protocol';

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
  tls?: MetricsTls;
  /** With `tls`: the KubeVirt CR's tlsConfiguration in force (minimum version, ciphers), followed live. */
  tlsConfiguration?: TlsConfigurationSource;
  /** Time budget of one scrape's collection (default 5 s; Prometheus's default timeout is 10 s). */
  scrapeBudgetMs?: number;
  /**
   * When the port is taken (replicas sharing a node's host network), retry binding every
   * this many ms instead of failing: the server then resolves unbound and serves once the
   * other process lets the port go. Default: fail with EADDRINUSE.
   */
  retryInUseMs?: number;
  /** Where the server says what it did (bound late, fell back to its own certificate). */
  log?: (m: string) => void;
}

/** The metrics server's certificate files. */
export interface MetricsTls {
  certFile: string;
  keyFile: string;
  /**
   * A pair to serve while the files cannot be read (a Secret mounted `optional` that does
   * not exist yet, as with the plain manifests, or before virt-operator made it): the
   * files replace it as soon as they appear. Without it, unreadable files are an error.
   */
  fallback?: () => Promise<{ cert: string; key: string }>;
}

/** A running metrics server. */
export interface MetricsServer {
  /** Base URL, e.g. `http://127.0.0.1:8443`. */
  readonly url: string;
  readonly port: number;
  /** False while it waits for a port in use (`retryInUseMs`). */
  bound(): boolean;
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
  let stopWatch = () => {};
  const log = o.log ?? (() => {});
  if (o.tls) {
    const files = { cert: o.tls.certFile, key: o.tls.keyFile };
    let material: Pick<TlsMaterial, 'cert' | 'key'>;
    try {
      material = readTlsFiles(files);
    } catch (e) {
      if (!o.tls.fallback) throw e;
      const pair = await o.tls.fallback();
      material = { cert: Buffer.from(pair.cert), key: Buffer.from(pair.key) };
      log(`metrics: ${(e as Error).message}; serving a self-signed certificate until the files appear`);
    }
    const context = () => ({
      cert: material.cert,
      key: material.key,
      ...currentTlsProtocol(o.tlsConfiguration),
    });
    const https = createHttpsServer(context(), handle);
    const stopFiles = watchTlsFiles(
      files,
      (m) => {
        material = m;
        https.setSecureContext(context());
        log('metrics: serving certificate reloaded');
      },
      { onError: (e) => log(`metrics: certificate not reloaded: ${e.message}`) },
    );
    const stopTlsFollow = followTlsProtocol(o.tlsConfiguration, () => https.setSecureContext(context()));
    stopWatch = () => {
      stopFiles();
      stopTlsFollow();
    };
    server = https;
  } else server = createHttpServer(handle);
  let bound = false;
  let retry: NodeJS.Timeout | undefined;
  let closed = false;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const onError = (e: NodeJS.ErrnoException) => {
        if (e.code !== 'EADDRINUSE' || o.retryInUseMs === undefined || closed) {
          reject(e);
          return;
        }
        retry = setTimeout(() => void listen().catch(() => undefined), o.retryInUseMs);
        resolve();
      };
      server.once('error', onError);
      server.listen(o.port ?? 0, o.host ?? '127.0.0.1', () => {
        server.off('error', onError);
        if (retry) log(`metrics: port ${o.port} free now, serving`);
        bound = true;
        resolve();
      });
    });
  try {
    await listen();
  } catch (e) {
    stopWatch();
    throw e;
  }
  if (!bound) log(`metrics: port ${o.port} in use, retrying every ${o.retryInUseMs} ms`);
  const addr = server.address() as AddressInfo | null;
  const port = addr?.port ?? o.port ?? 0;
  const address = addr?.address ?? o.host ?? '127.0.0.1';
  const host = address.includes(':') ? `[${address}]` : address;
  return {
    url: `${o.tls ? 'https' : 'http'}://${host}:${port}`,
    port,
    bound: () => bound,
    close: () =>
      new Promise<void>((resolve) => {
        closed = true;
        if (retry) clearTimeout(retry);
        stopWatch();
        if (!bound) {
          resolve();
          return;
        }
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
