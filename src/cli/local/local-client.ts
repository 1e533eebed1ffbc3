/**
 * How the CLI reaches a running `kubevirt-ts up`: the embedded store over its socket (a
 * `KubeClient`, so the commands are the same as against a cluster) and the local
 * subresource API over the other socket.
 */
import { existsSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { Duplex } from 'node:stream';
import { KubeClient } from '../../controllers/runtime/kube/client';
import type { StatePaths } from './state-dir';

/** The pid of the `up` that owns `paths`, when it is alive. */
export function runningUpPid(paths: StatePaths): number | undefined {
  if (!existsSync(paths.pidFile)) return undefined;
  const pid = Number.parseInt(readFileSync(paths.pidFile, 'utf8'), 10);
  if (!Number.isInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
    return pid;
  } catch {
    return undefined;
  }
}

/** A client of a running local mode. */
export class LocalClient {
  readonly store: KubeClient;

  constructor(readonly paths: StatePaths) {
    if (!existsSync(paths.storeSocket) || !existsSync(paths.apiSocket)) {
      throw new Error(
        `local mode is not running (no sockets in ${paths.root}): start it with \`kubevirt-ts up -d\`, or pass --kubeconfig for a cluster`,
      );
    }
    this.store = KubeClient.fromSocket(paths.storeSocket);
  }

  /**
   * Calls a `subresources.kubevirt.io` subresource of a VMI (or, with `resource`, of a VM),
   * with `body` as JSON; throws the server's message on failure.
   */
  subresource<T = unknown>(
    method: 'GET' | 'PUT',
    namespace: string,
    name: string,
    sub: string,
    body?: unknown,
    resource: 'virtualmachineinstances' | 'virtualmachines' = 'virtualmachineinstances',
  ): Promise<T> {
    return localRequest<T>(
      this.paths.apiSocket,
      method,
      `/apis/subresources.kubevirt.io/v1/namespaces/${encodeURIComponent(namespace)}/${resource}/${encodeURIComponent(name)}/${sub}`,
      body,
    );
  }

  /** An upload token for PVC `pvc` (an UploadTokenRequest created through the local API). */
  async uploadToken(namespace: string, pvc: string): Promise<string> {
    const answer = await localRequest<{ status?: { token?: string } }>(
      this.paths.apiSocket,
      'POST',
      `/apis/upload.cdi.kubevirt.io/v1beta1/namespaces/${encodeURIComponent(namespace)}/uploadtokenrequests`,
      {
        apiVersion: 'upload.cdi.kubevirt.io/v1beta1',
        kind: 'UploadTokenRequest',
        metadata: { generateName: 'token-for-virtctl-', namespace },
        spec: { pvcName: pvc },
      },
    );
    if (!answer.status?.token) throw new Error('the UploadTokenRequest came back without status.token');
    return answer.status.token;
  }

  close(): void {
    this.store.close();
  }
}

/** One JSON request over a unix socket (with a JSON body when `body` is given). */
export function localRequest<T>(
  socketPath: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers = {
      accept: 'application/json',
      ...(data ? { 'content-type': 'application/json', 'content-length': String(data.length) } : {}),
    };
    const req = http.request({ socketPath, method, path, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown;
        try {
          body = text ? JSON.parse(text) : {};
        } catch {
          body = { message: text };
        }
        if ((res.statusCode ?? 500) >= 300) {
          reject(new Error((body as { message?: string }).message ?? `HTTP ${res.statusCode}`));
        } else resolve(body as T);
      });
    });
    req.on('error', (e) => reject(new Error(`${socketPath}: ${e.message}`)));
    req.end(data);
  });
}

/**
 * Opens one port-forward stream to `port` of the VMI's guest through the local API at
 * `apiSocket` (an HTTP upgrade; raw TCP bytes after it). Rejects with the server's message.
 */
export function openPortForward(
  apiSocket: string,
  namespace: string,
  name: string,
  port: number,
): Promise<Duplex> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      socketPath: apiSocket,
      method: 'GET',
      path: `/apis/subresources.kubevirt.io/v1/namespaces/${encodeURIComponent(namespace)}/virtualmachineinstances/${encodeURIComponent(name)}/portforward/${port}/tcp`,
      headers: { connection: 'Upgrade', upgrade: 'kubevirt-ts-tcp' },
    });
    req.on('upgrade', (_res, socket, head) => {
      // The stream carries TCP half-closes: the guest's reply may follow our end.
      (socket as Duplex & { allowHalfOpen: boolean }).allowHalfOpen = true;
      if (head.length > 0) socket.unshift(head);
      resolve(socket);
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (d) => {
        body += d;
      });
      res.on('end', () =>
        reject(new Error(`port-forward ${namespace}/${name}:${port}: ${body || res.statusCode}`)),
      );
    });
    req.on('error', (e) => reject(new Error(`${apiSocket}: ${e.message}`)));
    req.end();
  });
}
