/**
 * One byte range of a plain `http:` source, read on its own TCP connection straight into
 * the block's buffer (the socket's `onread` hands the kernel the buffer's unfilled part):
 * no HTTP parser or stream per 64 KiB chunk and no copy. bench/storage.ts measured node's
 * http client as what kept streamed imports well below a bare `qemu-img convert` of the
 * URL. Anything but a plain 206 with the asked Content-Range and Content-Length (chunked,
 * compressed, another status) is left to node's http client: {@link NotPlainRange}.
 */
import { validateHeaderName, validateHeaderValue } from 'node:http';
import net from 'node:net';

/** The answer was not a plain 206 of the asked bytes: read this range with node's http client. */
export class NotPlainRange extends Error {}

const MAX_HEADER = 64 * 1024;
const OWN_HEADERS = new Set(['host', 'range', 'accept-encoding', 'connection']);

/** The request's bytes; header names and values are checked as node's http client checks them. */
function requestOf(url: URL, headers: Record<string, string>, from: number, to: number): string {
  const path = `${url.pathname}${url.search}`;
  if (/[\s]/.test(path)) throw new Error(`the URL's path ${JSON.stringify(path)} holds white space`);
  let req = `GET ${path} HTTP/1.1\r\nHost: ${url.host}\r\nRange: bytes=${from}-${to}\r\nAccept-Encoding: identity\r\nConnection: close\r\n`;
  for (const [k, v] of Object.entries(headers)) {
    // These are the request's own (as node's client, where `range` is set over them).
    if (OWN_HEADERS.has(k.toLowerCase())) continue;
    validateHeaderName(k);
    validateHeaderValue(k, v);
    req += `${k}: ${v}\r\n`;
  }
  return `${req}\r\n`;
}

/** Why a response head is not the plain answer to `bytes=from-to`, or undefined when it is. */
function headProblem(head: string, from: number, to: number): string | undefined {
  const [status, ...lines] = head.split('\r\n');
  if (!/^HTTP\/1\.[01] 206 /.test(`${status} `)) return `answered ${status}`;
  const h = new Map<string, string>();
  for (const l of lines) {
    const i = l.indexOf(':');
    if (i > 0) h.set(l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim());
  }
  if (h.has('transfer-encoding') || (h.get('content-encoding') ?? 'identity') !== 'identity')
    return 'an encoded body';
  if (h.get('content-length') !== String(to - from + 1)) return `content-length ${h.get('content-length')}`;
  if (!h.get('content-range')?.startsWith(`bytes ${from}-${to}/`))
    return `content-range ${h.get('content-range')}`;
  return undefined;
}

/**
 * Reads bytes `from`..`to` (inclusive) of the plain-http `url` into a new buffer. Fails
 * with {@link NotPlainRange} when the answer is not a plain 206 of those bytes, else with
 * what went wrong (no answer for 60 s, the connection closed early).
 */
export function readPlainRange(
  url: URL,
  headers: Record<string, string>,
  from: number,
  to: number,
): Promise<Buffer> {
  const length = to - from + 1;
  const request = requestOf(url, headers, from, to);
  return new Promise((resolve, reject) => {
    const out = Buffer.allocUnsafe(length);
    const scratch = Buffer.allocUnsafe(MAX_HEADER);
    let head = 0; // bytes of the response head gathered in `scratch`
    let at = -1; // bytes of the body in `out`; -1 while the head is read
    let settled = false;
    const finish = (err?: Error) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      if (err) reject(err);
      else resolve(out);
    };
    const socket = net.connect({
      host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: Number(url.port || 80),
      onread: {
        // The head goes to `scratch`, the body straight into `out`'s unfilled part.
        buffer: () => (at < 0 ? scratch.subarray(head) : out.subarray(at)),
        callback: (n: number) => {
          if (settled) return false;
          if (at >= 0) {
            at += n;
          } else {
            head += n;
            const end = scratch.subarray(0, head).indexOf('\r\n\r\n');
            if (end < 0) {
              if (head === MAX_HEADER) finish(new Error(`a response head over ${MAX_HEADER} bytes`));
              return true;
            }
            const problem = headProblem(scratch.toString('latin1', 0, end), from, to);
            if (problem) {
              finish(new NotPlainRange(problem));
              return false;
            }
            at = scratch.copy(out, 0, end + 4, Math.min(head, end + 4 + length));
          }
          if (at === length) finish();
          return true;
        },
      },
    } as net.NetConnectOpts);
    socket.setTimeout(60_000, () => finish(new Error('no response for 60s')));
    socket.on('error', (e) => finish(e));
    socket.on('close', () =>
      finish(new Error(`the connection closed after ${Math.max(at, 0)} of ${length} bytes`)),
    );
    socket.write(request);
  });
}
