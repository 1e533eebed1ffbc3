/**
 * The websocket subresources of a cluster (`console`, `vnc`, `portforward/{port}/tcp`) as
 * upstream's virtctl opens them: `wss://<api server>/apis/subresources.kubevirt.io/v1/namespaces/{ns}/
 * virtualmachineinstances/{name}/{sub}` with subprotocol `plain.kubevirt.io`, the
 * kubeconfig's credentials, and the bytes in binary messages. Answered as a byte stream.
 */
import type https from 'node:https';
import type { Duplex } from 'node:stream';
import type { KubeConfig } from '@kubernetes/client-node';
import { type ClientOptions, createWebSocketStream, WebSocket } from 'ws';

/** Opens the stream; rejects with the server's message when it refuses the upgrade. */
export async function openClusterStream(
  kc: KubeConfig,
  ns: string,
  name: string,
  sub: 'console' | 'vnc' | `portforward/${number}/tcp`,
): Promise<Duplex> {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('kubeconfig has no current cluster');
  const opts: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  const url = new URL(
    `/apis/subresources.kubevirt.io/v1/namespaces/${encodeURIComponent(ns)}/virtualmachineinstances/${encodeURIComponent(name)}/${sub}`,
    cluster.server,
  );
  url.protocol = url.protocol === 'http:' ? 'ws:' : 'wss:';
  const ws = new WebSocket(url, ['plain.kubevirt.io'], {
    ca: opts.ca,
    cert: opts.cert,
    key: opts.key,
    headers: opts.headers as Record<string, string>,
    rejectUnauthorized: opts.rejectUnauthorized,
    handshakeTimeout: 30_000,
  } as ClientOptions);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (c: Buffer) => {
        text += c.toString('utf8');
      });
      res.on('end', () => {
        let msg = text.trim();
        try {
          msg = (JSON.parse(text) as { message?: string }).message ?? msg;
        } catch {}
        reject(new Error(`${sub} ${ns}/${name}: ${res.statusCode} ${msg}`));
      });
    });
    ws.once('error', (e) => reject(new Error(`${sub} ${ns}/${name}: ${e.message}`)));
  });
  return createWebSocketStream(ws);
}
