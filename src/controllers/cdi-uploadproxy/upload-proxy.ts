/**
 * cdi-uploadproxy (CDI's pkg/uploadproxy): the endpoint `virtctl image-upload` sends an
 * image to. It takes an upload token (`Authorization: Bearer`, from an
 * UploadTokenRequest), verifies its signature with the signer's certificate and its
 * expiry, checks the PVC it names is an upload target whose upload pod is ready (waiting
 * up to 10 s, as CDI's), and streams the request to that pod's Service over mutual TLS:
 * the proxy's client certificate, the upload server's certificate checked against the
 * install's CA for the Service's DNS name. Nothing of the body is held.
 */
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { request } from 'node:https';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import {
  POD_PHASE_ANNOTATION,
  POD_READY_ANNOTATION,
  UPLOAD_HEALTHZ_PATH,
  UPLOAD_REQUEST_ANNOTATION,
  uploadPathKind,
  uploadResourceName,
} from '../common/cdi-upload';
import { ProxyError, type ProxyServer, startProxyServer } from '../common/proxy-https-server';
import { InvalidUploadTokenError, verifyUploadToken } from '../common/upload-token';
import { NotFoundError } from '../runtime/errors';
import { PersistentVolumeClaimType, ServiceType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';

/** Where an upload server is reached, and the name its certificate must carry. */
export interface UploadServerAddress {
  host: string;
  port: number;
  servername: string;
  /**
   * A stream to the server the proxy runs its TLS over instead of dialling host:port (local
   * mode: the host has no route to the pod network, so a relay inside the pod's network
   * namespace carries the connection). The certificate is checked the same way.
   */
  connect?: () => Duplex;
}

export interface UploadProxyOptions {
  client: ObjectClient;
  /** The proxy's serving pair (PEM files, re-read at each new connection's context). */
  certFile: string;
  keyFile: string;
  /** The upload-token signer's certificate (its public key verifies tokens; read per request). */
  signerCertFile: string;
  /** The client pair presented to upload servers, and the CA bundle their certificates chain to. */
  clientCertFile: string;
  clientKeyFile: string;
  caBundleFile: string;
  port: number;
  host?: string;
  /** How long to wait for the upload pod to be ready (CDI's 10 s). */
  readyWaitMs?: number;
  /** Where the upload server of a claim is (default: its Service's ClusterIP, port 443). */
  resolve?: (namespace: string, claim: string) => Promise<UploadServerAddress>;
  log?: (line: string) => void;
}

export type UploadProxy = ProxyServer;

/** A refusal answered with `code` and the message (a resolver throws one when a pod is not reachable yet). */
export { ProxyError };

const BEARER = /^Bearer\s+([A-Za-z0-9\-._~+/]+=*)$/i;

/** The Service's ClusterIP: the cluster's DNS may not be what the proxy's pod resolves with. */
function serviceResolver(client: ObjectClient) {
  return async (namespace: string, claim: string): Promise<UploadServerAddress> => {
    const name = uploadResourceName(claim);
    const svc = await client
      .get<KubeObject & { spec?: { clusterIP?: string } }>(ServiceType, name, namespace)
      .catch((e: unknown) => {
        if (e instanceof NotFoundError)
          throw new ProxyError(503, `the upload Service ${namespace}/${name} does not exist yet`);
        throw e;
      });
    const ip = svc.spec?.clusterIP;
    if (!ip || ip === 'None')
      throw new ProxyError(503, `the upload Service ${namespace}/${name} has no cluster IP`);
    return { host: ip, port: 443, servername: `${name}.${namespace}.svc` };
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts the proxy. */
export async function startUploadProxy(o: UploadProxyOptions): Promise<UploadProxy> {
  const log = o.log ?? (() => {});
  const resolve = o.resolve ?? serviceResolver(o.client);
  const readyWaitMs = o.readyWaitMs ?? 10_000;

  /** The claim once its upload pod is ready, else why not (CDI's messages). */
  const uploadReady = async (namespace: string, name: string) => {
    const deadline = Date.now() + readyWaitMs;
    for (;;) {
      let pvc: KubeObject;
      try {
        pvc = await o.client.get<KubeObject>(PersistentVolumeClaimType, name, namespace);
      } catch (e) {
        if (e instanceof NotFoundError)
          throw new ProxyError(503, `rejecting Upload Request for PVC ${name} that doesn't exist`);
        throw e;
      }
      const ann = pvc.metadata?.annotations ?? {};
      if (!(UPLOAD_REQUEST_ANNOTATION in ann))
        throw new ProxyError(503, `rejecting Upload Request for PVC ${name}: it is not an upload target`);
      if (ann[POD_PHASE_ANNOTATION] === 'Succeeded')
        throw new ProxyError(503, `rejecting Upload Request for PVC ${name} that already finished uploading`);
      if (ann[POD_READY_ANNOTATION] === 'true') return pvc;
      if (Date.now() >= deadline)
        throw new ProxyError(503, `the upload pod of PVC ${namespace}/${name} is not ready yet`);
      await sleep(1000);
    }
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'https://proxy');
    if (url.pathname === UPLOAD_HEALTHZ_PATH) {
      res.writeHead(200).end('OK');
      return;
    }
    const kind = uploadPathKind(url.pathname);
    if (!kind) throw new ProxyError(404, `no upload path ${url.pathname.slice(0, 100)}`);
    const match = BEARER.exec(String(req.headers.authorization ?? ''));
    if (!match) throw new ProxyError(400, 'an upload needs an Authorization: Bearer token');
    let payload: ReturnType<typeof verifyUploadToken>;
    try {
      payload = verifyUploadToken(match[1]!, await readFile(o.signerCertFile, 'utf8'));
    } catch (e) {
      if (e instanceof InvalidUploadTokenError)
        throw new ProxyError(401, `invalid upload token: ${e.message}`);
      throw e;
    }
    const pvc = await uploadReady(payload.namespace, payload.name);
    const contentType = pvc.metadata?.annotations?.['cdi.kubevirt.io/storage.contentType'] ?? '';
    if (contentType !== '' && contentType !== 'kubevirt')
      throw new ProxyError(
        503,
        `rejecting upload request for PVC ${payload.name} - upload content-type ${contentType} is invalid`,
      );
    const target = await resolve(payload.namespace, payload.name);
    const [cert, key, ca] = await Promise.all([
      readFile(o.clientCertFile),
      readFile(o.clientKeyFile),
      readFile(o.caBundleFile),
    ]);
    const headers = { ...req.headers };
    delete headers.authorization;
    delete headers.host;
    log(`${req.method} ${url.pathname} for PVC ${payload.namespace}/${payload.name}`);
    const tls = { servername: target.servername, cert, key, ca, minVersion: 'TLSv1.2' } as const;
    const dial = target.connect;
    await new Promise<void>((done, fail) => {
      const up = request(
        {
          host: target.host,
          port: target.port,
          method: req.method,
          path: url.pathname,
          headers: { ...headers, host: target.servername },
          ...tls,
          // No agent then: each request gets its own relayed connection.
          ...(dial ? { createConnection: () => tlsConnect({ ...tls, socket: dial() }) } : {}),
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
          answer.on('end', () => done());
          answer.on('error', fail);
        },
      );
      up.on('error', (e) => fail(new ProxyError(502, `error in upload-proxy: ${e.message}`)));
      // The client going away ends the upstream request too, so the server sees a short body.
      req.on('close', () => {
        if (!req.complete) up.destroy(new Error('the client went away'));
      });
      req.pipe(up);
    });
  };

  return startProxyServer({
    certFile: o.certFile,
    keyFile: o.keyFile,
    port: o.port,
    host: o.host,
    what: 'upload proxy',
    log,
    handle,
  });
}
