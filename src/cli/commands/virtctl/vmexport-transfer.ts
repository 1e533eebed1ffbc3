/**
 * The network side of `virtctl vmexport download` (upstream's pkg/virtctl/vmexport):
 * the port-forward to the exporter pod (`--port-forward`: a local listener whose each
 * connection is one pods/portforward websocket to the pod's 8443), and the HTTPS GET of a
 * link with the export's token, verified against the link's CA for the link's host name
 * (also through the port-forward, where upstream's virtctl skips verification), or not
 * at all with `--insecure`, and gunzipped when asked.
 */
import { createWriteStream } from 'node:fs';
import { request } from 'node:https';
import { createServer, type Server } from 'node:net';
import { PassThrough, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import { type KubeConfig, PortForward } from '@kubernetes/client-node';

/** A local port forwarded to a pod's port. */
export interface Forward {
  port: number;
  close(): Promise<void>;
}

/** Listens on 127.0.0.1:`localPort` (0: any) and forwards each connection to `pod`:`podPort`. */
export async function forwardPort(
  kc: KubeConfig,
  namespace: string,
  pod: string,
  podPort: number,
  localPort: number,
): Promise<Forward> {
  const pf = new PortForward(kc, true);
  const open = new Set<import('node:net').Socket>();
  const server: Server = createServer((sock) => {
    open.add(sock);
    sock.on('close', () => open.delete(sock));
    // The local client going away (EPIPE when the pod's bytes arrive after its FIN) ends
    // this connection only: without a listener the error would end the whole process.
    sock.on('error', () => sock.destroy());
    // client-node writes what the pod sends to `sock` and reads what to send from `input`.
    const input = new PassThrough();
    sock.pipe(input);
    pf.portForward(namespace, pod, [podPort], sock, null, input)
      .then((ws) => {
        const w = typeof ws === 'function' ? ws() : ws;
        w?.on('close', () => sock.end());
        sock.on('close', () => w?.close());
      })
      .catch((e: Error) => sock.destroy(e));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(localPort, '127.0.0.1', () => resolve());
  });
  return {
    port: (server.address() as { port: number }).port,
    // Connections still open (an idle keep-alive one) would hold close() until they time out.
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** How to reach a link. */
export interface FetchOptions {
  url: string;
  token: string;
  /** The link's CA bundle. */
  ca: string;
  /** Connect here instead of the URL's host (`--service-url`, the port-forward), still verifying the URL's host name. */
  connectTo?: string;
  insecure?: boolean;
  headers?: Record<string, string>;
}

/** GETs a link; resolves with the response once its status is known. */
export function get(o: FetchOptions): Promise<import('node:http').IncomingMessage> {
  const u = new URL(o.url);
  const [host, port] = (o.connectTo ?? u.host).split(':');
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host,
        port: Number(port || 443),
        path: `${u.pathname}${u.search}`,
        method: 'GET',
        headers: { ...o.headers, 'x-kubevirt-export-token': o.token },
        ca: o.ca,
        servername: u.hostname,
        // One request per connection: no idle keep-alive socket left on the port-forward.
        agent: false,
        rejectUnauthorized: !o.insecure,
      },
      resolve,
    );
    req.on('error', reject);
    req.end();
  });
}

/** Downloads a link into `out` (gunzipped when `decompress`); returns the bytes written. */
export async function download(
  o: FetchOptions,
  out: Writable | string,
  decompress: boolean,
): Promise<number> {
  const res = await get(o);
  if (res.statusCode !== 200) {
    res.resume();
    throw new Error(`GET ${new URL(o.url).pathname}: ${res.statusCode} ${res.statusMessage ?? ''}`.trim());
  }
  let n = 0;
  const count = new PassThrough();
  count.on('data', (c: Buffer) => {
    n += c.length;
  });
  const sink = typeof out === 'string' ? createWriteStream(out) : out;
  if (decompress) await pipeline(res, createGunzip(), count, sink);
  else await pipeline(res, count, sink);
  return n;
}
