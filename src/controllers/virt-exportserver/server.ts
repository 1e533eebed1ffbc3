/**
 * virt-exportserver: the HTTPS server of a VirtualMachineExport's pod (upstream's
 * cmd/virt-exportserver). It serves the volumes and manifests the controller put in its
 * environment (common/export-paths.ts) to requests carrying the export's token, in the
 * `x-kubevirt-export-token` header or query parameter (compared in constant time; 401
 * without it or with another), answers `/exportready` to the kubelet's probe, and stops at
 * its `DEADLINE` (the export's TTL, or before its certificate's end: the controller then
 * starts a new pod with a new certificate).
 */
import { timingSafeEqual } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import {
  EXPORT_READY_PATH,
  EXPORT_TOKEN_HEADER,
  type ExportServerPaths,
  MANIFEST_DATA_DIR,
} from '../common/export-paths';
import { allManifests, hasExternalHost, renderList, secretManifests } from './manifests';
import { archiveHandler, dirHandler, gzipHandler, rawHandler, type VolumeHandler } from './volume-handlers';

/** What the server is started with. */
export interface ExportServerOptions {
  paths: ExportServerPaths;
  certFile: string;
  keyFile: string;
  /** File holding the token (the token Secret's `token` key); read per request, so a rotated Secret applies. */
  tokenFile: string;
  /** Stop serving then (none: never). */
  deadline?: Date;
  port: number;
  host?: string;
  /** Directory of the manifest ConfigMap (default /manifest_data). */
  manifestDir?: string;
  log?: (line: string) => void;
}

/** A running server. */
export interface ExportServer {
  server: Server;
  port: number;
  /** Resolves when the server stopped (its deadline, or close()). */
  closed: Promise<void>;
  close(): Promise<void>;
}

/** True when `given` equals `want`, compared in constant time. */
function tokenMatches(given: string | undefined, want: string): boolean {
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(want);
  return a.length === b.length && timingSafeEqual(a, b);
}

interface Route {
  prefix: boolean;
  handler: VolumeHandler;
}

/** The routes of `paths`: exact URIs, and the dir URIs as prefixes. */
async function routes(o: ExportServerOptions): Promise<Map<string, Route>> {
  const r = new Map<string, Route>();
  for (const v of o.paths.volumes) {
    const st = await stat(v.path);
    const image = st.isDirectory() ? join(v.path, 'disk.img') : v.path;
    if (v.rawUri) r.set(v.rawUri, { prefix: false, handler: rawHandler(image) });
    if (v.rawGzUri) r.set(v.rawGzUri, { prefix: false, handler: gzipHandler(image) });
    if (v.archiveUri) r.set(v.archiveUri, { prefix: false, handler: archiveHandler(v.path) });
    if (v.dirUri) r.set(v.dirUri, { prefix: true, handler: dirHandler(v.path) });
  }
  const dir = o.manifestDir ?? MANIFEST_DATA_DIR;
  const wantsYaml = (req: IncomingMessage) => (req.headers.accept ?? '') === 'application/yaml';
  const manifests = (make: () => Promise<Array<Record<string, unknown>>>): VolumeHandler => {
    return async (req, res) => {
      const { body, contentType } = renderList(await make(), wantsYaml(req));
      res.writeHead(200, { 'content-type': contentType }).end(body);
    };
  };
  // `/external` only when the controller knew an external host (else 404, as a path not served).
  const external = o.paths.vmUri ? await hasExternalHost(dir) : false;
  for (const kind of external ? (['internal', 'external'] as const) : (['internal'] as const)) {
    if (o.paths.vmUri)
      r.set(`/${kind}${o.paths.vmUri}`, {
        prefix: false,
        handler: manifests(() => allManifests(dir, o.paths.volumes, kind)),
      });
    if (o.paths.secretUri)
      r.set(`/${kind}${o.paths.secretUri}`, {
        prefix: false,
        handler: manifests(async () => secretManifests(dir, await readToken(o.tokenFile))),
      });
  }
  return r;
}

async function readToken(file: string): Promise<string> {
  return (await readFile(file, 'utf8')).trim();
}

/** Starts the server; refuses to start without a token or with no volume. */
export async function startExportServer(o: ExportServerOptions): Promise<ExportServer> {
  const log = o.log ?? ((l: string) => console.log(l));
  if (!(await readToken(o.tokenFile))) throw new Error(`${o.tokenFile}: the token is empty`);
  const table = await routes(o);
  const [cert, key] = await Promise.all([readFile(o.certFile), readFile(o.keyFile)]);
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'https://export');
    if (url.pathname === EXPORT_READY_PATH) {
      res.writeHead(200).end('ok\n');
      return;
    }
    let route = table.get(url.pathname);
    let rest = '';
    if (!route)
      for (const [uri, r] of table)
        if (r.prefix && url.pathname.startsWith(uri)) {
          route = r;
          rest = url.pathname.slice(uri.length);
        }
    if (!route) {
      res.writeHead(404).end();
      return;
    }
    const given = url.searchParams.get(EXPORT_TOKEN_HEADER) ?? req.headers[EXPORT_TOKEN_HEADER];
    if (!tokenMatches(typeof given === 'string' ? given : undefined, await readToken(o.tokenFile))) {
      res.writeHead(401).end();
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(400).end();
      return;
    }
    await route.handler(req, res, rest);
  };
  const server = createServer({ cert, key, minVersion: 'TLSv1.2' }, (req, res) => {
    handle(req, res).catch((e: Error) => {
      log(`${req.method} ${(req.url ?? '').split('?')[0]}: ${e.message}`);
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy(e);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host ?? '0.0.0.0', () => resolve());
  });
  const port = (server.address() as { port: number }).port;
  let timer: NodeJS.Timeout | undefined;
  const closed = new Promise<void>((resolve) => server.on('close', () => resolve()));
  const close = async () => {
    if (timer) clearTimeout(timer);
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  if (o.deadline) {
    const ms = o.deadline.getTime() - Date.now();
    // setTimeout holds at most ~24.8 days; a longer deadline is re-armed.
    const arm = (left: number) => {
      timer = setTimeout(
        () => {
          const now = o.deadline!.getTime() - Date.now();
          if (now > 1000) arm(now);
          else {
            log(`deadline ${o.deadline!.toISOString()} reached: stopping`);
            void close();
          }
        },
        Math.max(0, Math.min(left, 2 ** 31 - 1)),
      );
    };
    arm(ms);
  }
  log(`serving ${table.size} paths on ${port}`);
  return { server, port, closed, close };
}
