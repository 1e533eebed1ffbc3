/**
 * The HTTPS server of the project's reverse proxies (cdi-uploadproxy, virt-exportproxy):
 * TLS 1.2+, a handler's {@link ProxyError} answered with its status and message (anything
 * else with 500), and the serving pair re-read every minute so a renewed Secret applies to
 * new connections.
 */
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';

/** A refusal a proxy answers with `code` and the message. */
export class ProxyError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** A running proxy server. */
export interface ProxyServer {
  server: Server;
  port: number;
  close(): Promise<void>;
}

/** What {@link startProxyServer} needs. */
export interface ProxyServerOptions {
  /** The serving pair (PEM files). */
  certFile: string;
  keyFile: string;
  port: number;
  host?: string;
  /** For the start-up log line: `<what> on <port>`. */
  what: string;
  log: (line: string) => void;
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>;
}

/** Starts the server; resolves once it listens. */
export async function startProxyServer(o: ProxyServerOptions): Promise<ProxyServer> {
  const loadPair = async () => ({ cert: await readFile(o.certFile), key: await readFile(o.keyFile) });
  let pair = await loadPair();
  const server = createServer({ ...pair, minVersion: 'TLSv1.2' }, (req, res) => {
    o.handle(req, res).catch((e: Error) => {
      const code = e instanceof ProxyError ? e.code : 500;
      o.log(`${req.method} ${(req.url ?? '').split('?')[0]}: ${code} ${e.message}`);
      if (!res.headersSent) res.writeHead(code, { 'content-type': 'text/plain' }).end(e.message);
      else res.destroy(e);
      req.resume();
    });
  });
  // A renewed serving pair (the Secret's files change) applies to new connections.
  const timer = setInterval(() => {
    loadPair()
      .then((p) => {
        if (!p.cert.equals(pair.cert)) {
          pair = p;
          server.setSecureContext({ ...p, minVersion: 'TLSv1.2' });
        }
      })
      .catch(() => {});
  }, 60_000);
  timer.unref();
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(o.port, o.host ?? '0.0.0.0', () => ok());
  });
  const port = (server.address() as { port: number }).port;
  o.log(`${o.what} on ${port}`);
  return {
    server,
    port,
    close: async () => {
      clearInterval(timer);
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
