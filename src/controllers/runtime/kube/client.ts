/**
 * The Kubernetes backend of `ObjectClient`: REST calls to a real API server (or to the
 * embedded store's server over a unix socket), with a QPS/burst token bucket per upstream
 * clientset (clientset.ts) and retries with exponential backoff for answers that mean
 * "try again" (429, 503, connection refused). Authentication and TLS come from a
 * kubeconfig: ./kubeconfig's lean reader for files and the service account
 * (client-node's KubeConfig only for exec and auth-provider users), or any KubeConfig a
 * caller passes.
 */
import { Backoff, type BackoffOptions, sleep } from '../backoff';
import { ApiError, badRequest, errorFromStatus, type Status } from '../errors';
import { TokenBucket } from '../token-bucket';
import type {
  DeleteOptions,
  DeleteResult,
  KubeList,
  KubeObject,
  ListOptions,
  ObjectClient,
  PatchOptions,
  ResourceType,
  WatchEvent,
  WatchHandle,
  WatchOptions,
  WriteOptions,
} from '../types';
import { clientsetOf } from './clientset';
import { LeanKubeConfig } from './kubeconfig';
import { type Endpoint, type HttpRequest, type HttpResponse, HttpTransport } from './transport';
import { followWatch } from './watch-stream';

/** A KubeClient's rate limit, retries and User-Agent. */
export interface KubeClientOptions {
  /**
   * Sustained requests per second (default 50). `Infinity` (with burst `Infinity`): no
   * client-side limit, for a client of the embedded store, which serves one host's
   * components, where upstream's limit would only protect a shared API server.
   */
  qps?: number;
  /** Requests allowed in a burst above `qps` (default 100). */
  burst?: number;
  /** Retries of a request answered 429/503 or refused (default 5). */
  retries?: number;
  /** Backoff between those retries. */
  backoff?: BackoffOptions;
  /** User-Agent header (default `kubevirt-ts`). */
  userAgent?: string;
}

const contentTypes = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;

/** Rejects names that would change the meaning of a REST path. */
function segment(what: string, value: string): string {
  if (!value || value === '.' || value === '..' || value.includes('/')) {
    throw badRequest(`invalid ${what} ${JSON.stringify(value)}: must be a non-empty name without "/"`);
  }
  return encodeURIComponent(value);
}

/** The collection path of a kind, in a namespace or across all. */
export function collectionPath(type: ResourceType, namespace?: string): string {
  const prefix = type.group ? `/apis/${type.group}/${type.version}` : `/api/${type.version}`;
  if (type.namespaced && namespace)
    return `${prefix}/namespaces/${segment('namespace', namespace)}/${type.plural}`;
  return `${prefix}/${type.plural}`;
}

/**
 * `ObjectClient` over the Kubernetes REST API (see the file comment). Made with
 * `fromKubeconfig`, `inCluster` or `fromSocket` (the embedded store's server).
 */
export class KubeClient implements ObjectClient {
  private readonly transport: HttpTransport;
  private readonly limit: { qps: number; burst: number };
  /** One token bucket per upstream clientset (clientset.ts), made on first use. */
  private buckets = new Map<string, TokenBucket>();
  private readonly retries: number;
  private readonly backoffOptions: BackoffOptions;

  private readonly contextNamespace?: string;

  constructor(endpoint: Endpoint, options: KubeClientOptions = {}) {
    if ('kubeConfig' in endpoint) {
      const kc = endpoint.kubeConfig;
      this.contextNamespace = kc.getContextObject(kc.getCurrentContext())?.namespace;
    }
    this.transport = new HttpTransport(endpoint, options.userAgent);
    this.limit = { qps: options.qps ?? 50, burst: options.burst ?? 100 };
    // Made now so a bad limit throws here, not at the first call.
    this.buckets.set('kubernetes', new TokenBucket(this.limit.qps, this.limit.burst));
    this.retries = options.retries ?? 5;
    this.backoffOptions = options.backoff ?? { initialMs: 100, maxMs: 5000 };
  }

  /** From a kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster). */
  static fromKubeconfig(file?: string, options?: KubeClientOptions & { context?: string }): KubeClient {
    const kc = new LeanKubeConfig();
    if (file) kc.loadFromFile(file);
    else kc.loadFromDefault();
    if (options?.context) kc.setCurrentContext(options.context);
    return new KubeClient({ kubeConfig: kc }, options);
  }

  /**
   * From the pod's service account (in-cluster): $KUBERNETES_SERVICE_HOST/PORT and the
   * token, CA and namespace under /var/run/secrets/kubernetes.io/serviceaccount (below
   * `pathPrefix`, when given). The token file is re-read as it rotates.
   */
  static inCluster(options?: KubeClientOptions & { pathPrefix?: string }): KubeClient {
    const kc = new LeanKubeConfig();
    kc.loadFromCluster(options?.pathPrefix);
    return new KubeClient({ kubeConfig: kc }, options);
  }

  /** The namespace of the kubeconfig's current context (in-cluster: the pod's), if any. */
  get namespace(): string | undefined {
    return this.contextNamespace;
  }

  /** To the embedded store's REST server on a unix socket. */
  static fromSocket(socketPath: string, options?: KubeClientOptions): KubeClient {
    return new KubeClient({ socketPath }, options);
  }

  /** The current rate limit. */
  get rateLimit(): { qps: number; burst: number } {
    return { ...this.limit };
  }

  /**
   * Replaces the rate limit (upstream's ReloadableRateLimiter: the KubeVirt CR's
   * restClient setting applies without a restart); a new bucket starts full. Returns
   * whether it changed.
   */
  setRateLimit(qps: number, burst: number): boolean {
    if (qps === this.limit.qps && burst === this.limit.burst) return false;
    this.buckets = new Map([['kubernetes', new TokenBucket(qps, burst)]]);
    Object.assign(this.limit, { qps, burst });
    return true;
  }

  /** The token bucket a request to `path` waits on: its clientset's. */
  private bucketFor(path: string): TokenBucket {
    const set = clientsetOf(path);
    let b = this.buckets.get(set);
    if (!b) {
      b = new TokenBucket(this.limit.qps, this.limit.burst);
      this.buckets.set(set, b);
    }
    return b;
  }

  /** Closes kept-alive connections (open watches stop on their own). */
  close(): void {
    this.transport.close();
  }

  /**
   * A request outside the object API (e.g. an aggregated API's subresource) with this
   * client's connection and credentials; the response as it came.
   */
  request(req: HttpRequest): Promise<HttpResponse> {
    return this.transport.request(req);
  }

  async get<T extends KubeObject>(type: ResourceType, name: string, namespace?: string): Promise<T> {
    return this.call<T>({ method: 'GET', path: this.objectPath(type, name, namespace) });
  }

  async list<T extends KubeObject>(type: ResourceType, options: ListOptions = {}): Promise<KubeList<T>> {
    return this.call<KubeList<T>>({
      method: 'GET',
      path: collectionPath(type, options.namespace),
      query: {
        labelSelector: options.labelSelector,
        fieldSelector: options.fieldSelector,
        limit: options.limit,
        continue: options.continue,
      },
    });
  }

  async watch<T extends KubeObject>(
    type: ResourceType,
    options: WatchOptions,
    onEvent: (event: WatchEvent<T>) => void,
  ): Promise<WatchHandle> {
    const path = collectionPath(type, options.namespace);
    await this.bucketFor(path).take();
    const { res, abort } = await this.transport.stream({
      method: 'GET',
      path,
      query: {
        watch: 1,
        resourceVersion: options.resourceVersion,
        allowWatchBookmarks: options.allowWatchBookmarks || undefined,
        timeoutSeconds: options.timeoutSeconds,
        labelSelector: options.labelSelector,
        fieldSelector: options.fieldSelector,
      },
    });
    if (res.statusCode !== 200) {
      const chunks: Buffer[] = [];
      for await (const c of res) chunks.push(c as Buffer);
      throw this.toError({
        status: res.statusCode ?? 0,
        headers: res.headers,
        body: Buffer.concat(chunks).toString(),
      });
    }
    return followWatch(res, abort, {
      what: `watch ${type.plural}`,
      from: this.transport.describe(),
      timeoutSeconds: options.timeoutSeconds,
      onEvent: (ev) => onEvent(ev as WatchEvent<T>),
    });
  }

  async create<T extends KubeObject>(type: ResourceType, object: T, options: WriteOptions = {}): Promise<T> {
    const ns = object.metadata?.namespace;
    return this.call<T>({
      method: 'POST',
      path: collectionPath(type, this.requireNs(type, ns)),
      body: object,
      query: this.writeQuery(options),
    });
  }

  async update<T extends KubeObject>(type: ResourceType, object: T, options: WriteOptions = {}): Promise<T> {
    const m = object.metadata ?? {};
    return this.call<T>({
      method: 'PUT',
      path: this.objectPath(type, m.name ?? '', m.namespace),
      body: object,
      query: this.writeQuery(options),
    });
  }

  async updateStatus<T extends KubeObject>(
    type: ResourceType,
    object: T,
    options: WriteOptions = {},
  ): Promise<T> {
    const m = object.metadata ?? {};
    return this.call<T>({
      method: 'PUT',
      path: `${this.objectPath(type, m.name ?? '', m.namespace)}/status`,
      body: object,
      query: this.writeQuery(options),
    });
  }

  async patch<T extends KubeObject>(
    type: ResourceType,
    name: string,
    patch: unknown,
    options: PatchOptions,
  ): Promise<T> {
    const contentType = contentTypes[options.type];
    if (!contentType) throw badRequest(`unsupported patch type "${options.type}"`);
    return this.call<T>({
      method: 'PATCH',
      path:
        this.objectPath(type, name, options.namespace) + (options.subresource === 'status' ? '/status' : ''),
      body: patch,
      contentType,
      query: {
        ...this.writeQuery(options),
        force: options.type === 'apply' && options.force ? true : undefined,
      },
    });
  }

  async delete<T extends KubeObject>(
    type: ResourceType,
    name: string,
    options: DeleteOptions = {},
  ): Promise<DeleteResult<T>> {
    const body = {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      preconditions: options.preconditions,
      propagationPolicy: options.propagationPolicy,
      gracePeriodSeconds: options.gracePeriodSeconds,
      dryRun: options.dryRun ? ['All'] : undefined,
    };
    const out = await this.call<T | Status>({
      method: 'DELETE',
      path: this.objectPath(type, name, options.namespace),
      body,
    });
    if ((out as Status).kind === 'Status') return { pending: false };
    const obj = out as T;
    // The server answers with the object: still there (finalizers) when it carries a deletionTimestamp.
    return {
      pending: Boolean(obj.metadata?.deletionTimestamp && obj.metadata.finalizers?.length),
      object: obj,
    };
  }

  // ---- private ------------------------------------------------------------------------

  private requireNs(type: ResourceType, ns: string | undefined): string | undefined {
    if (!type.namespaced) return undefined;
    if (!ns)
      throw badRequest(
        `${type.kind} is namespaced: metadata.namespace (or the namespace option) is required`,
      );
    return ns;
  }

  private objectPath(type: ResourceType, name: string, namespace?: string): string {
    return `${collectionPath(type, this.requireNs(type, namespace))}/${segment(`${type.kind} name`, name)}`;
  }

  private writeQuery(options: WriteOptions): HttpRequest['query'] {
    return { dryRun: options.dryRun ? 'All' : undefined, fieldManager: options.fieldManager };
  }

  private toError(res: HttpResponse): ApiError {
    try {
      const status = JSON.parse(res.body) as Status;
      if (status && status.kind === 'Status') return errorFromStatus(status, res.status);
    } catch {
      // not JSON: fall through
    }
    return errorFromStatus(
      { code: res.status, message: `HTTP ${res.status}: ${res.body.slice(0, 200)}` },
      res.status,
    );
  }

  /** One API call with rate limiting and retries (each retry waits a growing backoff). */
  private async call<T>(req: HttpRequest): Promise<T> {
    const backoff = new Backoff(this.backoffOptions);
    for (let attempt = 0; ; attempt++) {
      await this.bucketFor(req.path).take();
      let res: HttpResponse;
      try {
        res = await this.transport.request(req);
      } catch (err) {
        const e = err as NodeJS.ErrnoException & { reusedSocket?: boolean };
        // Refused, missing socket, broken pipe, or a reset on a stale kept-alive connection:
        // the request never reached the server, so any verb may be retried. Other resets only for GET.
        const retriable =
          e.code === 'ECONNREFUSED' ||
          e.code === 'ENOENT' ||
          e.code === 'EPIPE' ||
          (e.code === 'ECONNRESET' && (e.reusedSocket || req.method === 'GET'));
        if (retriable && attempt < this.retries) {
          await backoff.wait(req.signal);
          continue;
        }
        throw new ApiError(
          503,
          'ServiceUnavailable',
          `${req.method} ${req.path} on ${this.transport.describe()}: ${(err as Error).message}`,
        );
      }
      if (res.status >= 200 && res.status < 300) return JSON.parse(res.body) as T;
      if ((res.status === 429 || res.status === 503) && attempt < this.retries) {
        const after = Number(res.headers['retry-after']);
        const delay = backoff.next();
        await sleep(Number.isFinite(after) && after > 0 ? Math.max(after * 1000, delay) : delay, req.signal);
        continue;
      }
      throw this.toError(res);
    }
  }
}
