/**
 * virt-exportproxy's composition: its HTTPS server (TLS 1.2+, HTTP/1.1 only as upstream's,
 * the serving pair re-read every minute so a renewed Secret applies to new connections)
 * around the proxy handler, with the export lookup over the API.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:https';
import type { ObjectClient } from '../runtime/types';
import { apiExportLookup } from './lookup';
import { type ExportLookup, ProxyError, proxyHandler } from './proxy';

/** What the proxy is started with. */
export interface ExportProxyOptions {
  client: ObjectClient;
  /** The serving pair (PEM files; the install CA's certificate for `virt-exportproxy.<ns>.svc`). */
  certFile: string;
  keyFile: string;
  /** The CA bundle the export servers' certificates chain to (the `kubevirt-ca` ConfigMap's `ca-bundle`). */
  caBundleFile: string;
  port: number;
  host?: string;
  /** Default: the export and its Service read through `client`. */
  lookup?: ExportLookup;
  log?: (line: string) => void;
}

/** A running proxy. */
export interface ExportProxy {
  server: Server;
  port: number;
  close(): Promise<void>;
}

/** Starts the proxy. */
export async function startExportProxy(o: ExportProxyOptions): Promise<ExportProxy> {
  const log = o.log ?? (() => {});
  const handle = proxyHandler({
    lookup: o.lookup ?? apiExportLookup(o.client),
    caBundleFile: o.caBundleFile,
    log,
  });
  const loadPair = async () => ({ cert: await readFile(o.certFile), key: await readFile(o.keyFile) });
  let pair = await loadPair();
  const server = createServer({ ...pair, minVersion: 'TLSv1.2' }, (req, res) => {
    handle(req, res).catch((e: Error) => {
      const code = e instanceof ProxyError ? e.code : 500;
      log(`${req.method} ${(req.url ?? '').split('?')[0]}: ${code} ${e.message}`);
      if (!res.headersSent) res.writeHead(code, { 'content-type': 'text/plain' }).end(e.message);
      else res.destroy(e);
      req.resume();
    });
  });
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
  log(`export proxy on ${port}`);
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
