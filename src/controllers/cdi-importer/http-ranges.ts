/**
 * An http(s) source read by byte ranges, so qemu-img can convert it as it streams (through
 * nbd-export.ts) instead of after a full download: CDI reads http sources through nbdkit's
 * curl plugin for the same reason. Reads go in aligned blocks of {@link BLOCK_BYTES}, kept
 * in a small cache, with the next block fetched ahead: qemu-img's reads are mostly
 * sequential and far smaller than a block, so most of them cost no request.
 */
import http from 'node:http';
import https from 'node:https';
import { type DownloadOptions, headersOf, trustedCas } from './http-download';
import { NotPlainRange, readPlainRange } from './http-range-socket';

export const BLOCK_BYTES = 8 << 20;
/**
 * Blocks fetched ahead of the last one read (over as many connections): qemu-img then
 * rarely waits for the network (bench/storage.ts measured 4 MiB blocks 3 ahead slower).
 */
const READ_AHEAD = 6;
/** Blocks kept (128 MiB), the ones fetched ahead included. */
const CACHE_BLOCKS = 16;

/** A source that answers ranges: its size, its first bytes, and reads. */
export interface RangeSource {
  size: number;
  /** The first bytes (up to 6), for the compression check. */
  head: Buffer;
  read(offset: number, length: number): Promise<Buffer>;
  close(): void;
}

interface Fetcher {
  url: URL;
  headers: Record<string, string>;
  ca?: string[];
  agent: http.Agent;
}

function rangeGet(f: Fetcher, url: URL, from: number, to: number): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const mod = url.protocol === 'https:' ? https : http;
    const req = mod.get(
      url,
      {
        headers: { ...f.headers, range: `bytes=${from}-${to}` },
        agent: f.agent,
        ...(f.ca ? { ca: f.ca } : {}),
      },
      resolve,
    );
    req.on('error', reject);
    req.setTimeout(60_000, () => req.destroy(new Error('no response for 60s')));
  });
}

/**
 * The response's body into one buffer of `length`. By 'data' events, not `for await`: the
 * async iterator's promise per 64 KiB chunk cost about a fifth of the read rate.
 */
function body(res: http.IncomingMessage, length: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const out = Buffer.allocUnsafe(length);
    let at = 0;
    res.on('data', (chunk: Buffer) => {
      if (at + chunk.length > length) {
        res.destroy();
        reject(new Error(`more than the ${length} bytes asked for`));
        return;
      }
      chunk.copy(out, at);
      at += chunk.length;
    });
    res.on('end', () => (at === length ? resolve(out) : reject(new Error(`got ${at} of ${length} bytes`))));
    res.on('error', reject);
    // After 'end' the promise is settled and this does nothing.
    res.on('close', () => reject(new Error(`the connection closed after ${at} of ${length} bytes`)));
  });
}

/**
 * Opens `o.url` for ranged reads: undefined when the server does not answer a range
 * request with 206 and the total size (the importer then downloads the whole source).
 * Redirects are followed once here; the reads go to where they led.
 */
export async function openRangeSource(o: DownloadOptions): Promise<RangeSource | undefined> {
  const ca = await trustedCas(o.certDir);
  let url = new URL(o.url);
  const agent = new (url.protocol === 'https:' ? https.Agent : http.Agent)({
    keepAlive: true,
    maxSockets: READ_AHEAD + 1,
  });
  const f: Fetcher = {
    url,
    headers: headersOf(o),
    ca,
    agent,
  };
  let probe: http.IncomingMessage | undefined;
  try {
    for (let hop = 0; hop <= 10; hop++) {
      const res = await rangeGet(f, url, 0, 5);
      if ((res.statusCode ?? 0) >= 300 && (res.statusCode ?? 0) < 400 && res.headers.location) {
        res.resume();
        url = new URL(res.headers.location, url);
        continue;
      }
      probe = res;
      break;
    }
  } catch {
    agent.destroy();
    return undefined; // the download path reports the error in its own words
  }
  const total = /^bytes 0-\d+\/(\d+)$/.exec(probe?.headers['content-range'] ?? '')?.[1];
  if (probe?.statusCode !== 206 || total === undefined) {
    probe?.destroy();
    agent.destroy();
    return undefined;
  }
  const size = Number(total);
  let head: Buffer;
  try {
    head = await body(probe, Math.min(6, size));
  } catch {
    agent.destroy();
    return undefined;
  }
  f.url = url;
  const cache = new Map<number, Promise<Buffer>>();
  const fetchBlock = (i: number): Promise<Buffer> => {
    let p = cache.get(i);
    if (p) {
      // Most recently used last: eviction takes the oldest.
      cache.delete(i);
      cache.set(i, p);
      return p;
    }
    const from = i * BLOCK_BYTES;
    const to = Math.min(size, from + BLOCK_BYTES) - 1;
    const viaClient = () =>
      rangeGet(f, f.url, from, to).then((res) => {
        if (res.statusCode !== 206) {
          res.resume();
          throw new Error(`http data source ${f.url.href} answered ${res.statusCode} to a range request`);
        }
        return body(res, to - from + 1);
      });
    // Plain http on a socket of its own (http-range-socket.ts), node's client for https
    // and for answers that are not a plain 206.
    p =
      f.url.protocol === 'http:'
        ? readPlainRange(f.url, f.headers, from, to).catch((e) => {
            if (e instanceof NotPlainRange) return viaClient();
            throw new Error(`http data source ${f.url.href}: ${e.message}`);
          })
        : viaClient();
    p.catch(() => cache.delete(i));
    cache.set(i, p);
    while (cache.size > CACHE_BLOCKS) cache.delete(cache.keys().next().value as number);
    return p;
  };
  return {
    size,
    head,
    async read(offset, length) {
      if (offset < 0 || length < 0 || offset + length > size)
        throw new Error(`read of ${length} bytes at ${offset} is outside the ${size} bytes`);
      const first = Math.floor(offset / BLOCK_BYTES);
      const last = Math.floor((offset + Math.max(length, 1) - 1) / BLOCK_BYTES);
      const blocks = [];
      for (let i = first; i <= last; i++) blocks.push(fetchBlock(i));
      // Sequential readers come back for the next blocks: have them on the way.
      for (let i = last + 1; i <= last + READ_AHEAD && i * BLOCK_BYTES < size; i++)
        fetchBlock(i).catch(() => {});
      if (blocks.length === 1) {
        // Within one block (the usual case): a view of it, no copy.
        const start = offset - first * BLOCK_BYTES;
        return (await blocks[0]).subarray(start, start + length);
      }
      const out = Buffer.allocUnsafe(length);
      let at = 0;
      for (const [k, p] of blocks.entries()) {
        const block = await p;
        const start = k === 0 ? offset - first * BLOCK_BYTES : 0;
        const n = Math.min(block.length - start, length - at);
        block.copy(out, at, start, start + n);
        at += n;
      }
      return out;
    },
    close() {
      cache.clear();
      agent.destroy();
    },
  };
}
