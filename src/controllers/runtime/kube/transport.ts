/**
 * HTTP(S) transport to a Kubernetes API server: authentication and TLS come from a
 * kubeconfig (./kubeconfig's reader, or client-node's KubeConfig: files, in-cluster
 * service account, exec/OIDC plugins); a unix socket (the embedded store's server) is spoken to in plain
 * HTTP. Connections are kept alive.
 */
import http from 'node:http';
import https from 'node:https';
import type { KubeConfigSource } from './kubeconfig';

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  signal?: AbortSignal;
}

export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** Where and how to reach the API server. */
export type Endpoint = { kubeConfig: KubeConfigSource } | { socketPath: string };

/** How long authentication headers from the kubeconfig are reused before being refreshed. */
const AUTH_TTL_MS = 30_000;

export class HttpTransport {
  private base?: URL;
  private agent?: http.Agent;
  private tls: https.RequestOptions = {};
  private headers: http.OutgoingHttpHeaders = {};
  private headersAt = 0;
  private readonly userAgent: string;

  constructor(
    private readonly endpoint: Endpoint,
    userAgent = 'kubevirt-ts',
  ) {
    this.userAgent = userAgent;
    if ('socketPath' in endpoint) {
      this.agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
    } else {
      const cluster = endpoint.kubeConfig.getCurrentCluster();
      if (!cluster)
        throw new Error('kubeconfig has no current cluster: set current-context or pass a context');
      this.base = new URL(cluster.server);
    }
  }

  /** A description for error messages. */
  describe(): string {
    return 'socketPath' in this.endpoint ? `unix:${this.endpoint.socketPath}` : String(this.base);
  }

  private async prepare(): Promise<void> {
    if ('socketPath' in this.endpoint) return;
    if (this.agent && Date.now() - this.headersAt < AUTH_TTL_MS) return;
    const opts: https.RequestOptions = {};
    await this.endpoint.kubeConfig.applyToHTTPSOptions(opts);
    this.headers = { ...(opts.headers as http.OutgoingHttpHeaders) };
    if (opts.auth) this.headers.authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
    this.headersAt = Date.now();
    if (!this.agent) {
      const { ca, cert, key, pfx, passphrase, rejectUnauthorized, servername } = opts;
      this.tls = { ca, cert, key, pfx, passphrase, servername };
      if (rejectUnauthorized !== undefined) this.tls.rejectUnauthorized = rejectUnauthorized;
      this.agent =
        this.base!.protocol === 'https:'
          ? new https.Agent({ keepAlive: true, maxSockets: 64, ...(this.tls as https.AgentOptions) })
          : new http.Agent({ keepAlive: true, maxSockets: 64 });
    }
  }

  private async open(req: HttpRequest): Promise<{ res: http.IncomingMessage; abort: () => void }> {
    await this.prepare();
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(req.query ?? {}))
      if (v !== undefined && v !== '') qs.set(k, String(v));
    const q = qs.toString();
    const basePath = this.base ? this.base.pathname.replace(/\/$/, '') : '';
    const path = basePath + req.path + (q ? `?${q}` : '');
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    const headers: http.OutgoingHttpHeaders = {
      ...this.headers,
      accept: 'application/json',
      'user-agent': this.userAgent,
    };
    if (body !== undefined) {
      headers['content-type'] = req.contentType ?? 'application/json';
      headers['content-length'] = Buffer.byteLength(body);
    }
    const options: https.RequestOptions = {
      method: req.method,
      path,
      headers,
      agent: this.agent,
      ...('socketPath' in this.endpoint
        ? { socketPath: this.endpoint.socketPath }
        : { hostname: this.base!.hostname.replace(/^\[|\]$/g, ''), port: this.base!.port || undefined }),
    };
    const mod = this.base?.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const r = mod.request(options, (res) => resolve({ res, abort: () => r.destroy() }));
      r.on('error', (err: NodeJS.ErrnoException & { reusedSocket?: boolean }) => {
        // A reset on a kept-alive socket the server had already closed: the request was not processed.
        err.reusedSocket = r.reusedSocket;
        reject(err);
      });
      if (req.signal) {
        if (req.signal.aborted) r.destroy(new Error('aborted'));
        req.signal.addEventListener('abort', () => r.destroy(new Error('aborted')), { once: true });
      }
      r.end(body);
    });
  }

  /** One request; resolves with status and the whole body (any status). */
  async request(req: HttpRequest): Promise<HttpResponse> {
    const { res } = await this.open(req);
    const chunks: Buffer[] = [];
    for await (const c of res) chunks.push(c as Buffer);
    return {
      status: res.statusCode ?? 0,
      headers: res.headers,
      body: Buffer.concat(chunks).toString('utf8'),
    };
  }

  /** A streaming request (watch); the caller reads `res` and calls `abort` to stop. */
  stream(req: HttpRequest): Promise<{ res: http.IncomingMessage; abort: () => void }> {
    return this.open(req);
  }

  /** Closes kept-alive connections. */
  close(): void {
    this.agent?.destroy();
  }
}
