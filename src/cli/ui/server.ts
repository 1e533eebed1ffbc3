/**
 * The web console's server: the page and its bundled assets, the API of `routes.ts`, and
 * the console and VNC websockets, all behind the session of `session.ts`. It listens on
 * loopback unless told otherwise, with plain HTTP there as `kubectl proxy` (the browser and
 * the server share the host); any other address needs TLS (`tls`).
 */
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { hostname, networkInterfaces } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { Duplex } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { WebSocketServer } from 'ws';
import type { UiBackend } from './backend';
import { HttpFailure, handleApi, sendJson } from './routes';
import { UiSession } from './session';

/** Options of {@link startUiServer}. */
export interface UiServerOptions {
  backend: UiBackend;
  /** Default 127.0.0.1. */
  address?: string;
  /** Default 0: a free port. */
  port?: number;
  /**
   * Serve HTTPS with this certificate and key (PEM). Required for an address other than
   * loopback: off the host, the session token must not cross the network in clear.
   */
  tls?: { cert: string | Buffer; key: string | Buffer };
  /** The directory of the built bundle (`app.js`, `app.css`); default: found beside the CLI. */
  assetsDir?: string;
}

/** A running console server. */
export interface UiServer {
  /** The URL to open, with the session token. */
  url: string;
  /** The origin, without the token. */
  origin: string;
  close(): Promise<void>;
}

/** Bytes queued towards the browser before the guest's stream is paused. */
const SEND_HIGH_WATER = 4 << 20;
const STREAM_PATH = /^\/api\/vms\/([a-z0-9-]{1,63})\/([a-z0-9.-]{1,253})\/(console|vnc)$/;
/** The bundle's files: `app.js`, `app.css` and the lazily loaded `chunk-*.js`. */
const ASSET = /^\/assets\/([A-Za-z0-9_-]{1,64}\.(js|css))$/;
const ASSET_TYPES: Record<string, string> = { js: 'text/javascript', css: 'text/css' };

/** Where the bundle is: `dist/ui` of the package, from the built CLI or from the sources. */
export function defaultAssetsDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [
    join(here, 'ui'),
    join(here, '..', 'ui'),
    resolve(here, '..', '..', '..', 'dist', 'ui'),
  ];
  return candidates.find((d) => existsSync(join(d, 'app.js'))) ?? (candidates[0] as string);
}

/** The page: a shell the bundle fills in. */
export function indexHtml(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>kubevirt-ts</title>
<link rel="stylesheet" href="/assets/app.css">
</head><body><div id="app" role="main"></div>
<script type="module" src="/assets/app.js"></script></body></html>`;
}

/**
 * The Host values the server answers to: its address (and localhost on loopback); on a
 * wildcard address every address of the host's interfaces, and its host name.
 */
export function hostsFor(address: string, port: number): string[] {
  const bracket = (a: string) => (a.includes(':') ? `[${a}]` : a);
  const addrs = [address];
  if (address === '127.0.0.1' || address === '::1') addrs.push('localhost');
  if (address === '0.0.0.0' || address === '::') {
    addrs.push(hostname(), 'localhost');
    for (const list of Object.values(networkInterfaces())) for (const i of list ?? []) addrs.push(i.address);
  }
  return addrs.map((a) => `${bracket(a)}:${port}`);
}

/** Starts the server; resolves once it listens. */
export async function startUiServer(o: UiServerOptions): Promise<UiServer> {
  const address = o.address ?? '127.0.0.1';
  if (!o.tls && !['127.0.0.1', '::1', 'localhost'].includes(address)) {
    throw new Error(
      `--address ${address}: off loopback the console serves HTTPS only: give --tls-cert and --tls-key`,
    );
  }
  const assetsDir = o.assetsDir ?? defaultAssetsDir();
  if (!existsSync(join(assetsDir, 'app.js'))) {
    throw new Error(`the web console's bundle is missing (${assetsDir}/app.js): npm run build`);
  }
  let session: UiSession | undefined;
  const wss = new WebSocketServer({ noServer: true, maxPayload: 1 << 20 });

  const handler: http.RequestListener = (req, res) => {
    const s = session as UiSession;
    const url = new URL(req.url ?? '/', 'http://ui');
    // The printed URL: trade the token for the cookie, and drop it from the address bar.
    if (
      url.pathname === '/' &&
      req.method === 'GET' &&
      s.matches(url.searchParams.get('token') ?? undefined)
    ) {
      res.writeHead(303, { 'set-cookie': s.cookie(), location: '/', 'cache-control': 'no-store' });
      res.end();
      return;
    }
    const method = req.method ?? 'GET';
    const refusal = s.check(req, { stateChanging: method !== 'GET' && method !== 'HEAD' });
    if (refusal) {
      sendJson(res, refusal.code, {
        kind: 'Status',
        status: 'Failure',
        code: refusal.code,
        message: refusal.message,
      });
      return;
    }
    const common = {
      'x-content-type-options': 'nosniff',
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
    };
    if (url.pathname === '/' && method === 'GET') {
      res.writeHead(200, {
        ...common,
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'content-security-policy':
          "default-src 'self'; img-src 'self' blob: data:; style-src 'self' 'unsafe-inline'; connect-src 'self'; frame-ancestors 'none'",
      });
      res.end(indexHtml());
      return;
    }
    const asset = ASSET.exec(url.pathname);
    if (asset && method === 'GET' && existsSync(join(assetsDir, asset[1] as string))) {
      res.writeHead(200, { ...common, 'content-type': ASSET_TYPES[asset[2] as string] as string });
      res.end(readFileSync(join(assetsDir, asset[1] as string)));
      return;
    }
    if (url.pathname.startsWith('/api/')) {
      void handleApi(o.backend, req, res);
      return;
    }
    sendJson(res, 404, { kind: 'Status', status: 'Failure', code: 404, message: 'no such path' });
  };
  const server = o.tls
    ? https.createServer({ cert: o.tls.cert, key: o.tls.key }, handler)
    : http.createServer(handler);

  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    const s = session as UiSession;
    const refuse = (code: number, message: string) => {
      socket.end(
        `HTTP/1.1 ${code} ${code === 401 ? 'Unauthorized' : 'Refused'}\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${message.replace(/[\r\n]/g, ' ')}`,
      );
    };
    // A websocket is not bound by the same-origin policy: always check its Origin.
    const refusal = s.check(req, { stateChanging: true });
    if (refusal) return refuse(refusal.code, refusal.message);
    const m = STREAM_PATH.exec(new URL(req.url ?? '/', 'http://ui').pathname);
    if (!m) return refuse(404, 'no such stream');
    const [, ns, name, sub] = m as unknown as [string, string, string, 'console' | 'vnc'];
    o.backend.openStream(ns, name, sub).then(
      (stream) =>
        wss.handleUpgrade(req, socket, head, (ws) => {
          ws.binaryType = 'nodebuffer';
          // Flow control both ways: a slow browser pauses the guest's stream (VNC can
          // outrun it), a slow guest pauses the browser's input.
          stream.on('data', (c: Buffer) => {
            ws.send(c, () => {
              if (stream.isPaused() && ws.bufferedAmount < SEND_HIGH_WATER / 4) stream.resume();
            });
            if (ws.bufferedAmount > SEND_HIGH_WATER) stream.pause();
          });
          stream.on('close', () => ws.close(1000, 'stream closed'));
          stream.on('error', () => ws.close(1011, 'stream error'));
          ws.on('message', (d: Buffer) => {
            if (!stream.write(d)) {
              ws.pause();
              stream.once('drain', () => ws.resume());
            }
          });
          ws.on('close', () => stream.destroy());
        }),
      (e: unknown) => refuse(e instanceof HttpFailure ? e.code : 409, (e as Error).message),
    );
  });

  await new Promise<void>((res, rej) => {
    server.once('error', rej);
    server.listen(o.port ?? 0, address, () => res());
  });
  const port = (server.address() as AddressInfo).port;
  const hostPart = address.includes(':') ? `[${address}]` : address;
  session = new UiSession(hostsFor(address, port), Boolean(o.tls));
  const origin = `${o.tls ? 'https' : 'http'}://${hostPart}:${port}`;
  return {
    origin,
    url: `${origin}/?token=${session.token}`,
    close: async () => {
      for (const c of wss.clients) c.terminate();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
