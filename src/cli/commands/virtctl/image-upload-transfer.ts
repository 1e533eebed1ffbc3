/**
 * The HTTP side of `virtctl image-upload` (upstream's uploadData): the image POSTed to
 * the upload proxy with the token, to the async path when the proxy answers its HEAD
 * probe with 200 (else the sync path), retried on a failure, with a fresh token after a
 * 401 on a retry (a token expired while earlier tries ran) but not on the first try (a
 * refused token is an authentication error).
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { request } from 'node:https';
import tls from 'node:tls';

/** Upstream's paths on the proxy. */
export const UPLOAD_PROXY_URI = '/v1beta1/upload';
export const UPLOAD_PROXY_URI_ASYNC = '/v1beta1/upload-async';

export interface UploadTransfer {
  /** The proxy's base URL (https://host:port[/prefix]). */
  proxyUrl: string;
  insecure: boolean;
  /** CA certificates (PEM) trusted besides the system's: local mode's CA for its proxy. */
  ca?: string;
  file: string;
  retries: number;
  token: () => Promise<string>;
  log: (line: string) => void;
}

/** `base` with `uri` appended to its path unless it already holds it (upstream's ConstructUploadProxyPath). */
export function uploadUrl(base: string, uri: string): URL {
  const u = new URL(base);
  if (!base.includes(uri)) u.pathname = `${u.pathname.replace(/\/+$/, '')}${uri}`;
  return u;
}

interface Answer {
  code: number;
  body: string;
}

function send(
  url: URL,
  method: 'HEAD' | 'POST',
  token: string,
  trust: { insecure: boolean; ca?: string },
  file?: { path: string; size: number },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        rejectUnauthorized: !trust.insecure,
        ...(trust.ca ? { ca: [...tls.rootCertificates, trust.ca] } : {}),
        headers: {
          authorization: `Bearer ${token}`,
          ...(file
            ? { 'content-type': 'application/octet-stream', 'content-length': String(file.size) }
            : {}),
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          if (body.length < 4096) body += c;
        });
        res.on('end', () => resolve({ code: res.statusCode ?? 0, body: body.trim() }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    if (file)
      createReadStream(file.path)
        .on('error', (e) => req.destroy(e))
        .pipe(req);
    else req.end();
  });
}

/** Uploads the file; throws with the proxy's answer when every try failed. */
export async function uploadImage(t: UploadTransfer): Promise<void> {
  const size = (await stat(t.file)).size;
  let token = await t.token();
  let refreshes = 3;
  let last: Error | undefined;
  for (let attempt = 0; attempt < t.retries; attempt++) {
    if (attempt > 0) await new Promise((r) => setTimeout(r, attempt * Math.floor(Math.random() * 50)));
    const asyncUrl = uploadUrl(t.proxyUrl, UPLOAD_PROXY_URI_ASYNC);
    const probe = await send(asyncUrl, 'HEAD', token, t).catch(() => undefined);
    const url = probe?.code === 200 ? asyncUrl : uploadUrl(t.proxyUrl, UPLOAD_PROXY_URI);
    let answer: Answer;
    try {
      answer = await send(url, 'POST', token, t, { path: t.file, size });
    } catch (e) {
      last = e as Error;
      continue;
    }
    if (answer.code === 200) {
      t.log(`Uploaded ${size} bytes to ${url.origin}${url.pathname}`);
      return;
    }
    last = new Error(`unexpected return value ${answer.code}, ${answer.body}`);
    if (answer.code === 401) {
      if (attempt === 0 || refreshes === 0) throw new Error(`authentication failed: ${last.message}`);
      token = await t.token();
      refreshes--;
    }
  }
  throw new Error(`error uploading image after ${t.retries} retries: ${last?.message ?? 'no answer'}`);
}
