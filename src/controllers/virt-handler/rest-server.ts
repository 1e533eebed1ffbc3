/**
 * virt-handler's REST server (upstream's on port 8186): the per-VMI operations virt-api
 * forwards, over mutual TLS. Only a caller with virt-api's client certificate gets in: from
 * the cluster's KubeVirt CA, with upstream's common name and the clientAuth usage
 * (./client-identity); authorization of the end user already happened in the
 * API server. Console and VNC are websockets streaming the guest's unix sockets; the rest
 * are launcher RPCs over the existing gRPC connection.
 * Paths: `/v1/namespaces/{ns}/virtualmachineinstances/{name}/{op}`.
 */
import https from 'node:https';
import { connect } from 'node:net';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { WebSocketServer } from 'ws';
import type { VirtualMachineInstanceGuestAgentInfo } from '../../api/generated/types';
import { readLimitedBody } from '../common/request-body';
import { readTlsFiles, secureContextOptions, type TlsFiles, watchTlsFiles } from '../common/tls-files';
import { currentTlsProtocol, followTlsProtocol, type TlsConfigurationSource } from '../common/tls-protocol';
import { unfreezeTimeoutSeconds } from '../common/unfreeze-timeout';
import { PLAIN_STREAM_PROTOCOL, pipeWebSocket } from '../common/ws-stream';
import { type LauncherClient, LauncherCommandError } from '../launcher-protocol/client';
import { CONSOLE_SOCKET, VNC_SOCKET } from '../launcher-protocol/paths';
import { clientIdentityRefusal } from './client-identity';
import { VmiNotOnNodeError } from './handler';
import { GuestCalls, type GuestLauncher } from './vmi-operations';

/** What the server needs of the node agent. */
export interface NodeLaunchers {
  launcherOf(
    namespace: string,
    name: string,
  ): Promise<{ vmi: unknown; client: LauncherClient; socketsDir: string }>;
}

/** Options of {@link serveHandlerRest}. */
export interface HandlerRestOptions {
  launchers: NodeLaunchers;
  /** Serving certificate and key, and the CA client certificates must chain to. */
  tls: Required<TlsFiles>;
  host?: string;
  /** Default 8186, upstream's. */
  port?: number;
  /** The KubeVirt CR's tlsConfiguration in force (minimum version, ciphers), followed live. */
  tlsConfiguration?: TlsConfigurationSource;
  log?: (m: string) => void;
}

/** A running server. */
export interface HandlerRestServer {
  port: number;
  close(): Promise<void>;
}

const ROUTE =
  /^\/v1\/namespaces\/([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)\/virtualmachineinstances\/([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?)\/([a-z/]+)$/;

class HttpError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

type Op = (l: GuestLauncher) => Promise<unknown>;

/** A non-JSON answer (the screenshot). */
class RawBody {
  constructor(
    readonly contentType: string,
    readonly data: Buffer,
  ) {}
}

async function guestInfo(client: LauncherClient): Promise<VirtualMachineInstanceGuestAgentInfo> {
  const info = (await client.getGuestInfo()) as VirtualMachineInstanceGuestAgentInfo | undefined;
  if (!info) throw new HttpError(409, 'the guest agent is not connected');
  return info;
}

/**
 * Non-streaming operations by method and path suffix. Maps, not object literals: the
 * suffix comes from the caller, and a plain object would answer `constructor` too.
 */
const OPS = new Map<string, Op>([
  ['PUT pause', GuestCalls.pause],
  ['PUT unpause', GuestCalls.unpause],
  ['PUT softreboot', GuestCalls.softreboot],
  ['PUT reset', GuestCalls.reset],
  ['GET guestosinfo', ({ client }) => guestInfo(client)],
  ['GET userlist', async ({ client }) => ({ items: (await guestInfo(client)).userList ?? [] })],
  ['GET filesystemlist', async ({ client }) => ({ items: (await guestInfo(client)).fsInfo?.disks ?? [] })],
  [
    'GET sev/fetchcertchain',
    async ({ client }) => JSON.parse(Buffer.from(await client.getSevInfo()).toString('utf8')),
  ],
  [
    'GET sev/querylaunchmeasurement',
    async ({ vmi, client }) =>
      JSON.parse(Buffer.from(await client.getLaunchMeasurement(vmi)).toString('utf8')),
  ],
]);
const STREAMS = new Map<string, string>([
  ['console', CONSOLE_SOCKET],
  ['vnc', VNC_SOCKET],
]);

/**
 * The unfreeze timeout of a freeze body (upstream's FreezeUnfreezeTimeout,
 * `{"unfreezeTimeout": "5m0s"}`), in whole seconds as upstream's handler passes it on,
 * within what the launcher's timer holds (../common/unfreeze-timeout).
 */
function freezeBodySeconds(body: Buffer): number {
  let o: unknown;
  try {
    o = JSON.parse(body.toString('utf8') || 'null');
  } catch {
    throw new HttpError(400, 'failed to unmarshal unfreeze timeout: body is not JSON');
  }
  const t = (o as { unfreezeTimeout?: unknown } | null)?.unfreezeTimeout;
  if (t === undefined || t === null)
    throw new HttpError(400, 'Unfreeze timeout in freeze request is not set');
  try {
    return unfreezeTimeoutSeconds(t);
  } catch (e) {
    throw new HttpError(400, (e as Error).message);
  }
}

/** HTTP status of a launcher failure: by its gRPC code when it has one, else `fallback`. */
function launcherStatus(e: unknown, fallback: number): number {
  if (!(e instanceof LauncherCommandError)) return statusOf(e);
  const byCode: Record<number, number> = { 3: 400, 5: 404, 9: 409, 12: 501 };
  return (e.code !== undefined ? byCode[e.code] : undefined) ?? fallback;
}

function readBody(req: import('node:http').IncomingMessage, limit = 1 << 20): Promise<Buffer> {
  return readLimitedBody(req, limit, () => new HttpError(413, `request body over ${limit} bytes`), 'destroy');
}

function statusOf(e: unknown): number {
  if (e instanceof HttpError) return e.code;
  if (e instanceof VmiNotOnNodeError) return 404;
  return 500;
}

/** Starts the server; the serving certificate and CA are re-read when their files change. */
export async function serveHandlerRest(o: HandlerRestOptions): Promise<HandlerRestServer> {
  const log = o.log ?? (() => {});
  let material = readTlsFiles(o.tls);
  const context = () => ({ ...secureContextOptions(material), ...currentTlsProtocol(o.tlsConfiguration) });
  const server = https.createServer({ ...context(), requestCert: true, rejectUnauthorized: true });
  // The CA also signs other components' certificates: only virt-api's client identity gets
  // in. Before node:http's own listener, so no request on the connection is ever parsed.
  server.prependListener('secureConnection', (s: TLSSocket) => {
    const refusal = clientIdentityRefusal(s.getPeerX509Certificate());
    if (refusal) {
      log(`client refused: ${refusal}`);
      s.destroy();
    }
  });
  const stopWatch = watchTlsFiles(
    o.tls,
    (m) => {
      material = m;
      server.setSecureContext(context());
    },
    { onError: (e) => log(`TLS files not reloaded: ${e.message}`) },
  );
  const stopTlsFollow = followTlsProtocol(o.tlsConfiguration, (p) => {
    server.setSecureContext(context());
    log(`TLS settings now minimum ${p.minVersion}${p.ciphers ? `, ciphers ${p.ciphers}` : ''}`);
  });
  const wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (protocols) => (protocols.has(PLAIN_STREAM_PROTOCOL) ? PLAIN_STREAM_PROTOCOL : false),
  });
  const send = (res: import('node:http').ServerResponse, code: number, body: unknown) => {
    res.writeHead(code, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const route = (url: string | undefined) => {
    const m = ROUTE.exec(new URL(url ?? '/', 'https://handler').pathname);
    if (!m) throw new HttpError(404, 'no such path');
    return { ns: m[1] as string, name: m[3] as string, op: m[5] as string };
  };

  server.on('request', (req, res) => {
    (async () => {
      const { ns, name, op } = route(req.url);
      const fn = OPS.get(`${req.method} ${op}`);
      if (op === 'freeze' && req.method === 'PUT') {
        const seconds = freezeBodySeconds(await readBody(req));
        const l = await o.launchers.launcherOf(ns, name);
        // upstream's handler answers a failed freeze with 400.
        await l.client.freezeVirtualMachine(l.vmi, seconds).catch((e: unknown) => {
          throw new HttpError(launcherStatus(e, 400), (e as Error).message);
        });
        return {};
      }
      if (op === 'unfreeze' && req.method === 'PUT') {
        await readBody(req);
        const l = await o.launchers.launcherOf(ns, name);
        await l.client.unfreezeVirtualMachine(l.vmi).catch((e: unknown) => {
          throw new HttpError(launcherStatus(e, 400), (e as Error).message);
        });
        return {};
      }
      if (op === 'vnc/screenshot' && req.method === 'GET') {
        await readBody(req);
        const l = await o.launchers.launcherOf(ns, name);
        const shot = await l.client.getScreenshot(l.vmi).catch((e: unknown) => {
          throw new HttpError(launcherStatus(e, 500), (e as Error).message);
        });
        return new RawBody(shot.mime, shot.data);
      }
      if (op === 'sev/injectlaunchsecret' && req.method === 'PUT') {
        const body = await readBody(req);
        const l = await o.launchers.launcherOf(ns, name);
        let options: unknown;
        try {
          options = JSON.parse(body.toString('utf8') || '{}');
        } catch {
          throw new HttpError(400, 'body: not JSON');
        }
        await l.client.injectLaunchSecret(l.vmi, options);
        return {};
      }
      if (!fn) throw new HttpError(STREAMS.has(op) ? 400 : 404, `${req.method} ${op}: not served`);
      await readBody(req);
      return (await fn(await o.launchers.launcherOf(ns, name))) ?? {};
    })().then(
      (body) => {
        if (body instanceof RawBody) {
          res.writeHead(200, { 'content-type': body.contentType, 'content-length': body.data.length });
          res.end(body.data);
        } else send(res, 200, body);
      },
      (e: unknown) => {
        const code = statusOf(e);
        send(res, code, {
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          code,
          message: (e as Error).message,
        });
      },
    );
  });

  server.on('upgrade', (req, socket: Duplex, head) => {
    const refuse = (code: number, msg: string) => {
      socket.end(
        `HTTP/1.1 ${code} ${code === 404 ? 'Not Found' : 'Bad Request'}\r\ncontent-type: text/plain\r\n\r\n${msg}\n`,
      );
    };
    let r: ReturnType<typeof route>;
    try {
      r = route(req.url);
    } catch {
      return refuse(404, 'no such path');
    }
    const sock = STREAMS.get(r.op);
    if (!sock) return refuse(404, `${r.op}: not a stream`);
    o.launchers
      .launcherOf(r.ns, r.name)
      .then(({ socketsDir }) => {
        const guest = connect(join(socketsDir, sock));
        guest.once('error', (e) => {
          log(`${r.ns}/${r.name} ${r.op}: ${e.message}`);
          refuse(404, `${r.op} socket not available`);
        });
        guest.once('connect', () => {
          wss.handleUpgrade(req, socket, head, (ws) => {
            void pipeWebSocket(ws, guest);
          });
        });
      })
      // Whatever fails here answers this caller; it never reaches the process.
      .catch((e: unknown) => refuse(statusOf(e) === 404 ? 404 : 400, (e as Error).message));
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 8186, o.host ?? '0.0.0.0', () => resolve());
  });
  const addr = server.address();
  return {
    port: typeof addr === 'object' && addr ? addr.port : 0,
    close: async () => {
      stopWatch();
      stopTlsFollow();
      for (const c of wss.clients) c.terminate();
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
