/**
 * A kubeconfig reader for the components' own API clients, without
 * `@kubernetes/client-node`: importing that package's KubeConfig loads its whole generated
 * API (about 70 MB resident), which a component that only talks REST through
 * ./transport never uses. This reads what the components meet: kubeconfig files (the
 * `KUBECONFIG` list merged as kubectl merges it, first wins) and the pod's service
 * account, with client certificates, CA, bearer tokens (also from a token file, re-read as
 * it rotates), basic auth, `insecure-skip-tls-verify` and `tls-server-name`. A user with
 * an `exec` or `auth-provider` plugin is handed to client-node's KubeConfig, loaded then
 * and only then.
 */
import { existsSync, readFileSync } from 'node:fs';
import type https from 'node:https';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { parse } from 'yaml';

/** What ./transport and ./client need of a kubeconfig (client-node's KubeConfig has it too). */
export interface KubeConfigSource {
  getCurrentContext(): string;
  getContextObject(name: string): { namespace?: string } | null | undefined;
  getCurrentCluster(): { server: string } | null;
  applyToHTTPSOptions(opts: https.RequestOptions): Promise<void>;
}

interface NamedCluster {
  server: string;
  ca?: Buffer;
  insecure?: boolean;
  tlsServerName?: string;
}
interface NamedUser {
  cert?: Buffer;
  key?: Buffer;
  token?: string;
  tokenFile?: string;
  username?: string;
  password?: string;
  /** exec or auth-provider: only client-node's KubeConfig can run these. */
  plugin?: boolean;
}
interface NamedContext {
  cluster: string;
  user: string;
  namespace?: string;
}

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

type Raw = Record<string, unknown>;
const rec = (v: unknown): Raw => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Raw) : {});
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

/** A kubeconfig, read without client-node. */
export class LeanKubeConfig implements KubeConfigSource {
  private clusters = new Map<string, NamedCluster>();
  private users = new Map<string, NamedUser>();
  private contexts = new Map<string, NamedContext>();
  private current = '';
  /** The files read, for the plugin fallback. */
  private files: string[] = [];
  private fallback: Promise<KubeConfigSource> | undefined;

  /** Reads one kubeconfig file. */
  loadFromFile(file: string): void {
    this.reset();
    this.merge(file);
  }

  /** `$KUBECONFIG` (a `:`-separated list, merged first-wins), else ~/.kube/config, else in-cluster. */
  loadFromDefault(): void {
    this.reset();
    const list = (process.env.KUBECONFIG ?? '').split(':').filter((f) => f && existsSync(f));
    if (list.length > 0) {
      for (const f of list) this.merge(f);
      return;
    }
    const home = join(homedir(), '.kube', 'config');
    if (existsSync(home)) {
      this.merge(home);
      return;
    }
    if (process.env.KUBERNETES_SERVICE_HOST) {
      this.loadFromCluster();
      return;
    }
    throw new Error('no kubeconfig: set KUBECONFIG, create ~/.kube/config, or run in a pod');
  }

  /** The pod's service account: $KUBERNETES_SERVICE_HOST/PORT, its token (re-read), CA and namespace. */
  loadFromCluster(pathPrefix = ''): void {
    this.reset();
    const host = process.env.KUBERNETES_SERVICE_HOST;
    const port = process.env.KUBERNETES_SERVICE_PORT ?? '443';
    if (!host) throw new Error('in-cluster: KUBERNETES_SERVICE_HOST is not set');
    const dir = `${pathPrefix}${SA_DIR}`;
    const h = host.includes(':') ? `[${host}]` : host;
    this.clusters.set('inCluster', { server: `https://${h}:${port}`, ca: readFileSync(join(dir, 'ca.crt')) });
    this.users.set('inClusterUser', { tokenFile: join(dir, 'token') });
    const nsFile = join(dir, 'namespace');
    const namespace = existsSync(nsFile) ? readFileSync(nsFile, 'utf8').trim() : undefined;
    this.contexts.set('inClusterContext', { cluster: 'inCluster', user: 'inClusterUser', namespace });
    this.current = 'inClusterContext';
  }

  setCurrentContext(name: string): void {
    if (!this.contexts.has(name)) throw new Error(`kubeconfig: no context ${JSON.stringify(name)}`);
    this.current = name;
    this.fallback = undefined;
  }

  getCurrentContext(): string {
    return this.current;
  }

  getContextObject(name: string): { namespace?: string } | undefined {
    const c = this.contexts.get(name);
    return c ? { namespace: c.namespace } : undefined;
  }

  getCurrentCluster(): { server: string } | null {
    const c = this.contexts.get(this.current);
    return (c && this.clusters.get(c.cluster)) || null;
  }

  async applyToHTTPSOptions(opts: https.RequestOptions): Promise<void> {
    const ctx = this.contexts.get(this.current);
    if (!ctx)
      throw new Error(`kubeconfig: the current context ${JSON.stringify(this.current)} does not exist`);
    const cluster = this.clusters.get(ctx.cluster);
    if (!cluster)
      throw new Error(`kubeconfig: context ${this.current} names no known cluster ${ctx.cluster}`);
    const user = this.users.get(ctx.user) ?? {};
    if (user.plugin) return (await this.full()).applyToHTTPSOptions(opts);
    if (cluster.ca) opts.ca = cluster.ca;
    if (cluster.insecure) opts.rejectUnauthorized = false;
    if (cluster.tlsServerName) opts.servername = cluster.tlsServerName;
    if (user.cert) opts.cert = user.cert;
    if (user.key) opts.key = user.key;
    const headers = { ...((opts.headers as Record<string, string>) ?? {}) };
    const token = user.tokenFile ? readFileSync(user.tokenFile, 'utf8').trim() : user.token;
    if (token) headers.Authorization = `Bearer ${token}`;
    else if (user.username !== undefined) opts.auth = `${user.username}:${user.password ?? ''}`;
    opts.headers = headers;
  }

  private reset(): void {
    this.clusters.clear();
    this.users.clear();
    this.contexts.clear();
    this.current = '';
    this.files = [];
    this.fallback = undefined;
  }

  /** client-node's KubeConfig over the same files, for plugin users. */
  private full(): Promise<KubeConfigSource> {
    this.fallback ??= import('@kubernetes/client-node').then(({ KubeConfig }) => {
      const kc = new KubeConfig();
      const saved = process.env.KUBECONFIG;
      process.env.KUBECONFIG = this.files.join(':');
      try {
        kc.loadFromDefault();
      } finally {
        if (saved === undefined) delete process.env.KUBECONFIG;
        else process.env.KUBECONFIG = saved;
      }
      kc.setCurrentContext(this.current);
      return kc;
    });
    return this.fallback;
  }

  private merge(file: string): void {
    const path = resolve(file);
    const doc = rec(parse(readFileSync(path, 'utf8')));
    this.files.push(path);
    const base = dirname(path);
    const fileOrData = (o: Raw, fileKey: string, dataKey: string): Buffer | undefined => {
      const data = str(o[dataKey]);
      if (data) return Buffer.from(data, 'base64');
      const f = str(o[fileKey]);
      return f ? readFileSync(isAbsolute(f) ? f : join(base, f)) : undefined;
    };
    const list = (key: string) => (Array.isArray(doc[key]) ? (doc[key] as unknown[]) : []).map(rec);
    for (const c of list('clusters')) {
      const name = str(c.name);
      const cl = rec(c.cluster);
      const server = str(cl.server);
      if (!name || !server || this.clusters.has(name)) continue;
      this.clusters.set(name, {
        server,
        ca: fileOrData(cl, 'certificate-authority', 'certificate-authority-data'),
        insecure: cl['insecure-skip-tls-verify'] === true,
        tlsServerName: str(cl['tls-server-name']),
      });
    }
    for (const u of list('users')) {
      const name = str(u.name);
      if (!name || this.users.has(name)) continue;
      const us = rec(u.user);
      const tokenFile = str(us.tokenFile);
      this.users.set(name, {
        cert: fileOrData(us, 'client-certificate', 'client-certificate-data'),
        key: fileOrData(us, 'client-key', 'client-key-data'),
        token: str(us.token),
        tokenFile: tokenFile ? (isAbsolute(tokenFile) ? tokenFile : join(base, tokenFile)) : undefined,
        username: str(us.username),
        password: str(us.password),
        plugin: us.exec !== undefined || us['auth-provider'] !== undefined,
      });
    }
    for (const c of list('contexts')) {
      const name = str(c.name);
      const cx = rec(c.context);
      if (!name || this.contexts.has(name)) continue;
      this.contexts.set(name, {
        cluster: str(cx.cluster) ?? '',
        user: str(cx.user) ?? '',
        namespace: str(cx.namespace),
      });
    }
    if (!this.current) this.current = str(doc['current-context']) ?? '';
  }
}
