/**
 * virt-api's TLS listener: HTTP/2 offered by ALPN, HTTP/1.1 kept for clients that do not
 * speak it and for the websocket subresources (an HTTP/1.1 `Upgrade`, which is how the
 * aggregator's proxy and virtctl open `console`, `vnc` and `portforward`).
 *
 * Why HTTP/2: kube-apiserver's webhook client (Go's net/http) offers `h2` and, offered it,
 * multiplexes every concurrent webhook call over one connection. Over HTTP/1.1 it needs a
 * connection per call in flight and keeps only a few idle, so 50 concurrent creates made it
 * open (and TLS-handshake, on both sides) a new connection for one call in four to seven.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import http2, { type Http2SecureServer, type Http2ServerRequest, type Http2ServerResponse } from 'node:http2';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { SecureContextOptions } from 'node:tls';

/** A request on either protocol (node:http2's compatibility API mirrors node:http's). */
export type AnyRequest = IncomingMessage | Http2ServerRequest;
/** Its response. */
export type AnyResponse = ServerResponse | Http2ServerResponse;

/**
 * How long an idle HTTP/1.1 connection is kept. Longer than the idle timeout of Go's HTTP
 * client (90 s), so the client always closes first: a server closing an idle connection
 * can race a request the client has just written on it, which Go does not retry for a POST
 * (the API server reports "connection reset by peer" and, with failurePolicy Fail, refuses
 * the object). Node's own default is 5 s.
 */
export const HTTP1_KEEP_ALIVE_MS = 120_000;

/** The listener's handlers. */
export interface TlsListenerHandlers {
  request(req: AnyRequest, res: AnyResponse): void;
  /** An HTTP/1.1 `Upgrade` request (HTTP/2 has none: websockets come over HTTP/1.1). */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

/** A started listener. */
export interface TlsListener {
  server: Http2SecureServer;
  /** Replaces the certificate, key, client CA, minimum version and ciphers for new connections. */
  setSecureContext(options: SecureContextOptions): void;
  /** Stops accepting and drops every open connection (streams included). */
  close(): Promise<void>;
}

/**
 * Creates the listener: client certificates are requested but not required (webhook calls
 * come without one, the aggregator's carry the front proxy's), checked later per request.
 */
export function createTlsListener(context: SecureContextOptions, h: TlsListenerHandlers): TlsListener {
  const server = http2.createSecureServer({
    // Upstream's default minimum; `context` overrides it (the KubeVirt CR's tlsConfiguration).
    minVersion: 'TLSv1.2',
    ...context,
    requestCert: true,
    rejectUnauthorized: false,
    allowHTTP1: true,
    // An answer is a HEADERS and a DATA frame written apart: with Nagle's algorithm the
    // second could wait for the first's (delayed) ACK. node:http sets this; node:tls does not.
    noDelay: true,
  });
  // Read by node:http's connection handling, which serves the HTTP/1.1 connections here.
  (server as unknown as { keepAliveTimeout: number }).keepAliveTimeout = HTTP1_KEEP_ALIVE_MS;
  const sockets = new Set<Socket>();
  server.on('secureConnection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  server.on('request', h.request);
  server.on('upgrade', h.upgrade);
  return {
    server,
    setSecureContext: (o) => server.setSecureContext(o),
    close: async () => {
      const closed = new Promise<void>((r) => server.close(() => r()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
