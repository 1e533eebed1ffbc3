/**
 * virt-api's side of the node connection: finds the virt-handler on a VMI's node (its pod
 * in KubeVirt's namespace, label `kubevirt.io=virt-handler`, as upstream) and calls its
 * REST server over mutual TLS: virt-api presents its client certificate, and accepts only
 * a handler certificate from the KubeVirt CA with the handler's common name.
 */
import https from 'node:https';
import type { PeerCertificate } from 'node:tls';
import { type ClientOptions, WebSocket } from 'ws';
import { readTlsFiles, type TlsFiles, type TlsMaterial, watchTlsFiles } from '../common/tls-files';
import { PLAIN_STREAM_PROTOCOL } from '../common/ws-stream';
import { PodType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';
import { HttpError } from './http-error';

/** Upstream's common name of virt-handler's serving certificate. */
export const HANDLER_SERVER_CN = 'kubevirt.io:system:node:virt-handler';

/** Options of {@link HandlerClient}. */
export interface HandlerClientOptions {
  client: ObjectClient;
  /** Namespace of the virt-handler pods (KubeVirt's). */
  namespace: string;
  /** virt-api's client certificate and key, and the CA the handler's certificate chains to. */
  tls: Required<TlsFiles>;
  /** The handlers' REST port (upstream 8186). */
  port?: number;
  /** Common name the handler's certificate must have (default {@link HANDLER_SERVER_CN}). */
  serverName?: string;
  /**
   * Where the handler of a node listens (host or IP), instead of its pod's IP: for
   * handlers that run as plain processes (tests, hosts without a kubelet).
   */
  resolveHandler?: (nodeName: string) => Promise<string | undefined>;
}

type Pod = KubeObject & { status?: { podIP?: string; phase?: string }; spec?: { nodeName?: string } };

/** Calls virt-handlers. */
export class HandlerClient {
  private material: TlsMaterial;
  private agent: https.Agent;
  private readonly stopWatch: () => void;

  constructor(private readonly o: HandlerClientOptions) {
    this.material = readTlsFiles(o.tls);
    this.agent = this.makeAgent();
    this.stopWatch = watchTlsFiles(o.tls, (m) => {
      this.material = m;
      const old = this.agent;
      this.agent = this.makeAgent();
      old.destroy();
    });
  }

  private tlsOptions() {
    const expected = this.o.serverName ?? HANDLER_SERVER_CN;
    return {
      cert: this.material.cert,
      key: this.material.key,
      ca: this.material.ca,
      // Handlers are reached by pod IP: check the certificate's name, not the address.
      checkServerIdentity: (_host: string, cert: PeerCertificate) => {
        const cn = Array.isArray(cert.subject?.CN) ? cert.subject.CN[0] : cert.subject?.CN;
        return cn === expected
          ? undefined
          : new Error(`virt-handler certificate ${JSON.stringify(cn)} is not ${expected}`);
      },
    };
  }

  private makeAgent(): https.Agent {
    return new https.Agent({ keepAlive: true, maxSockets: 64, ...this.tlsOptions() });
  }

  /** The handler's base URL for the node a VMI runs on. */
  async baseUrl(nodeName: string | undefined): Promise<string> {
    if (!nodeName) throw new HttpError(409, 'the VMI is not scheduled to a node yet');
    const override = await this.o.resolveHandler?.(nodeName);
    if (override)
      return `https://${override.includes(':') ? `[${override}]` : override}:${this.o.port ?? 8186}`;
    const pods = await this.o.client.list<Pod>(PodType, {
      namespace: this.o.namespace,
      labelSelector: 'kubevirt.io=virt-handler',
      fieldSelector: `spec.nodeName=${nodeName}`,
    });
    const pod = pods.items.find((p) => p.status?.podIP && !p.metadata?.deletionTimestamp);
    if (!pod?.status?.podIP) throw new HttpError(503, `no virt-handler is serving on node ${nodeName}`);
    const ip = pod.status.podIP.includes(':') ? `[${pod.status.podIP}]` : pod.status.podIP;
    return `https://${ip}:${this.o.port ?? 8186}`;
  }

  private static path(ns: string, name: string, op: string): string {
    return `/v1/namespaces/${encodeURIComponent(ns)}/virtualmachineinstances/${encodeURIComponent(name)}/${op}`;
  }

  /** A non-streaming call; the handler's JSON answer, or an HttpError with its status. */
  async call(
    nodeName: string | undefined,
    method: 'GET' | 'PUT',
    ns: string,
    name: string,
    op: string,
    body?: unknown,
  ): Promise<unknown> {
    const res = await this.callRaw(nodeName, method, ns, name, op, body);
    const text = res.body.toString('utf8');
    try {
      return text ? JSON.parse(text) : {};
    } catch {
      throw new HttpError(502, `virt-handler: ${op}: answer is not JSON`);
    }
  }

  /** A call whose answer is returned as bytes (the screenshot); errors as in {@link call}. */
  async callRaw(
    nodeName: string | undefined,
    method: 'GET' | 'PUT',
    ns: string,
    name: string,
    op: string,
    body?: unknown,
  ): Promise<{ contentType: string; body: Buffer }> {
    const url = new URL(HandlerClient.path(ns, name, op), await this.baseUrl(nodeName));
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const req = https.request(
        url,
        {
          method,
          agent: this.agent,
          timeout: 60_000,
          headers: payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {},
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const data = Buffer.concat(chunks);
            if ((res.statusCode ?? 500) >= 300) {
              let msg = data.toString('utf8');
              try {
                msg = (JSON.parse(msg) as { message?: string }).message ?? msg;
              } catch {}
              reject(new HttpError(res.statusCode ?? 500, `virt-handler: ${msg}`));
            } else resolve({ contentType: String(res.headers['content-type'] ?? ''), body: data });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error('virt-handler did not answer in 60 s')));
      req.on('error', (e) => reject(new HttpError(502, `dialing virt-handler: ${e.message}`)));
      req.end(payload);
    });
  }

  /** Opens a stream (console, vnc) on the handler: an open websocket. */
  async stream(nodeName: string | undefined, ns: string, name: string, op: string): Promise<WebSocket> {
    const url = new URL(HandlerClient.path(ns, name, op), await this.baseUrl(nodeName));
    url.protocol = 'wss:';
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, [PLAIN_STREAM_PROTOCOL], {
        ...this.tlsOptions(),
        handshakeTimeout: 10_000,
      } as unknown as ClientOptions);
      ws.once('open', () => resolve(ws));
      ws.once('unexpected-response', (_req, res) => {
        let text = '';
        res.on('data', (c: Buffer) => {
          text += c.toString('utf8');
        });
        res.on('end', () =>
          reject(new HttpError(res.statusCode === 404 ? 404 : 400, `virt-handler: ${text.trim()}`)),
        );
      });
      ws.once('error', (e) => reject(new HttpError(502, `dialing virt-handler: ${e.message}`)));
    });
  }

  close(): void {
    this.stopWatch();
    this.agent.destroy();
  }
}
