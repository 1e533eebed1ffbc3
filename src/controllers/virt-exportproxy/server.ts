/**
 * virt-exportproxy's composition: its HTTPS server (TLS 1.2+, HTTP/1.1 only as upstream's,
 * the serving pair re-read every minute so a renewed Secret applies to new connections)
 * around the proxy handler, with the export lookup over the API.
 */
import { type ProxyServer, startProxyServer } from '../common/proxy-https-server';
import type { ObjectClient } from '../runtime/types';
import { apiExportLookup } from './lookup';
import { type ExportLookup, proxyHandler } from './proxy';

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
export type ExportProxy = ProxyServer;

/** Starts the proxy. */
export async function startExportProxy(o: ExportProxyOptions): Promise<ExportProxy> {
  const log = o.log ?? (() => {});
  const handle = proxyHandler({
    lookup: o.lookup ?? apiExportLookup(o.client),
    caBundleFile: o.caBundleFile,
    log,
  });
  return startProxyServer({
    certFile: o.certFile,
    keyFile: o.keyFile,
    port: o.port,
    host: o.host,
    what: 'export proxy',
    log,
    handle,
  });
}
