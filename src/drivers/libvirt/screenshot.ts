/**
 * virDomainScreenshot over libvirt's stream protocol (DOMAIN_SCREENSHOT, a read stream):
 * the call's reply carries the image's MIME type (QEMU's screendump: a PPM), then the
 * daemon sends the image as STREAM packets with status CONTINUE and ends it with an empty
 * CONTINUE packet; the client then finishes the stream with an OK packet, as libvirt's
 * virStreamFinish does, and the daemon confirms with OK and releases it.
 */
import {
  LibvirtConnectionError,
  LibvirtError,
  VIR_ERR_ERROR,
  VIR_ERR_OPERATION_TIMEOUT,
  VIR_FROM_RPC,
} from './errors';
import { MessageStatus, REMOTE_PROGRAM, REMOTE_PROTOCOL_VERSION, RemoteProc } from './protocol/constants';
import { type DomainRef, readOptString, writeDomain } from './protocol/types';
import type { RpcTransport, StreamHandler } from './transport';

/** A captured display: the MIME type libvirt reports and the image bytes. */
export interface DomainScreenshot {
  mime: string;
  data: Buffer;
}

/** Options of {@link captureScreenshot}. */
export interface ScreenshotOptions {
  /** Which screen (head) of the display; 0 is the first. */
  screen?: number;
  /** Refuse images larger than this (default 64 MiB: 8K RGB is 100 MB, far past any guest here). */
  maxBytes?: number;
  /** Give up on the stream after this long (default 30 s). */
  timeoutMs?: number;
}

/** Captures one screenshot of `dom` over `t`. */
export async function captureScreenshot(
  t: RpcTransport,
  dom: DomainRef,
  o: ScreenshotOptions = {},
): Promise<DomainScreenshot> {
  const maxBytes = o.maxBytes ?? 64 * 1024 * 1024;
  const chunks: Buffer[] = [];
  let size = 0;
  let serial = -1;
  let settle: { resolve: () => void; reject: (e: Error) => void } | undefined;
  const ended = new Promise<void>((resolve, reject) => {
    settle = { resolve, reject };
  });
  // Not awaited when the call itself fails: keep that from surfacing as unhandled.
  ended.catch(() => undefined);
  // Ends our side of the stream (OK: finished, ERROR: aborted); a gone connection has
  // dropped the stream with it, so there is nothing to tell.
  const endStream = (status: (typeof MessageStatus)[keyof typeof MessageStatus]) => {
    try {
      t.sendStream(REMOTE_PROGRAM, REMOTE_PROTOCOL_VERSION, RemoteProc.DOMAIN_SCREENSHOT, serial, status);
    } catch {
      // The connection is gone.
    }
  };
  const abort = (e: Error) => {
    endStream(MessageStatus.ERROR);
    t.dropStream(serial);
    settle?.reject(e);
  };
  const handler: StreamHandler = {
    onOpen: (s) => {
      serial = s;
    },
    onData: (d) => {
      // The daemon ends the data with an empty CONTINUE packet (libvirt's stream EOF).
      if (d.length === 0) {
        settle?.resolve();
        return;
      }
      size += d.length;
      if (size > maxBytes) {
        abort(new LibvirtConnectionError('closed', `screenshot of ${dom.name} exceeds ${maxBytes} bytes`));
        return;
      }
      chunks.push(Buffer.from(d));
    },
    onEnd: () => settle?.resolve(),
    onError: (e) => settle?.reject(e),
  };
  const mime = await t.call(
    REMOTE_PROGRAM,
    REMOTE_PROTOCOL_VERSION,
    RemoteProc.DOMAIN_SCREENSHOT,
    (w) => {
      writeDomain(w, dom);
      w.uint(o.screen ?? 0, 'screen');
      w.uint(0, 'flags');
    },
    readOptString,
    handler,
    'REMOTE_PROC_DOMAIN_SCREENSHOT',
  );
  const timeoutMs = o.timeoutMs ?? 30_000;
  const timer = setTimeout(
    () =>
      abort(
        new LibvirtError({
          code: VIR_ERR_OPERATION_TIMEOUT,
          domain: VIR_FROM_RPC,
          level: VIR_ERR_ERROR,
          message: `screenshot of ${dom.name}: the image did not arrive within ${timeoutMs} ms`,
        }),
      ),
    timeoutMs,
  );
  try {
    await ended;
  } finally {
    clearTimeout(timer);
  }
  endStream(MessageStatus.OK);
  return { mime: mime ?? 'application/octet-stream', data: Buffer.concat(chunks) };
}
