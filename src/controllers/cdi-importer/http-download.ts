/**
 * Downloads an http(s) source to a file, hashing it on the way (the DataVolume's
 * `checksum` is of the bytes served, compressed or not, as CDI checks it). TLS trusts the
 * system CAs plus the certConfigMap's; redirects are followed (at most 10).
 */
import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { rootCertificates } from 'node:tls';

export interface DownloadOptions {
  url: string;
  basicAuth?: { user: string; password: string };
  /** `Name: value` lines. */
  extraHeaders?: string[];
  /** Directory whose files are extra PEM CA certificates. */
  certDir?: string;
  /** Hash algorithm to compute (node's name: md5, sha1, sha256, sha512). */
  hashAlgorithm?: string;
  /** Called with bytes so far and the total when the server said it. */
  onProgress?: (done: number, total: number | undefined) => void;
}

export interface DownloadResult {
  bytes: number;
  /** Hex digest, when a hash algorithm was asked for. */
  digest?: string;
}

async function extraCas(dir: string | undefined): Promise<string[]> {
  if (!dir) return [];
  const names = (await readdir(dir)).filter((n) => !n.startsWith('.')).sort();
  return Promise.all(names.map((n) => readFile(join(dir, n), 'utf8')));
}

/**
 * The CAs a source is trusted by: the system's plus the certConfigMap's files in `dir`;
 * undefined when there are none of the latter (the defaults then apply).
 */
export async function trustedCas(dir: string | undefined): Promise<string[] | undefined> {
  const extra = await extraCas(dir);
  return extra.length > 0 ? [...rootCertificates, ...extra] : undefined;
}

export function headersOf(o: DownloadOptions): Record<string, string> {
  const h: Record<string, string> = { 'user-agent': 'kubevirt-ts-cdi-importer' };
  for (const line of o.extraHeaders ?? []) {
    const i = line.indexOf(':');
    if (i <= 0) throw new Error(`extra header ${JSON.stringify(line)} is not "Name: value"`);
    h[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  if (o.basicAuth)
    h.authorization = `Basic ${Buffer.from(`${o.basicAuth.user}:${o.basicAuth.password}`).toString('base64')}`;
  return h;
}

function get(
  url: URL,
  headers: Record<string, string>,
  ca: string[] | undefined,
): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const mod = url.protocol === 'https:' ? https : http;
    const req = mod.get(url, { headers, ...(ca ? { ca } : {}) }, resolve);
    req.on('error', reject);
    req.setTimeout(60_000, () => req.destroy(new Error('no response for 60s')));
  });
}

/** Downloads `o.url` into `file`; a non-2xx answer or a network error is an error naming the URL. */
export async function download(o: DownloadOptions, file: string): Promise<DownloadResult> {
  const ca = await trustedCas(o.certDir);
  const headers = headersOf(o);
  let url = new URL(o.url);
  for (let hop = 0; ; hop++) {
    let res: http.IncomingMessage;
    try {
      res = await get(url, headers, ca);
    } catch (err) {
      throw new Error(`Unable to connect to http data source ${url.href}: ${(err as Error).message}`);
    }
    const status = res.statusCode ?? 0;
    if (status >= 300 && status < 400 && res.headers.location) {
      res.resume();
      if (hop >= 10) throw new Error(`${o.url}: more than 10 redirects`);
      url = new URL(res.headers.location, url);
      continue;
    }
    if (status < 200 || status > 299) {
      res.resume();
      throw new Error(`http data source ${url.href} answered ${status} ${res.statusMessage ?? ''}`.trim());
    }
    const total = Number(res.headers['content-length']) || undefined;
    const hash = o.hashAlgorithm ? createHash(o.hashAlgorithm) : undefined;
    let done = 0;
    res.on('data', (chunk: Buffer) => {
      done += chunk.length;
      hash?.update(chunk);
      o.onProgress?.(done, total);
    });
    try {
      await pipeline(res, createWriteStream(file));
    } catch (err) {
      throw new Error(`reading ${url.href}: ${(err as Error).message}`);
    }
    if (total !== undefined && done !== total)
      throw new Error(`${url.href}: got ${done} bytes of the ${total} announced`);
    return { bytes: done, digest: hash?.digest('hex') };
  }
}
