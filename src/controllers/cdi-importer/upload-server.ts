/**
 * The upload server (CDI's cmd/cdi-uploadserver): the HTTPS server of an upload pod. It
 * takes one image POSTed by the upload proxy (a client certificate from the install's CA
 * with the proxy's common name; anyone else gets 401), writes it to scratch, and converts
 * it onto the claim with the importer's code (`qemu-img`: `disk.img` written as
 * `disk.img.tmp` and renamed when whole, or the raw device). Then it stops, and the pod's
 * success tells the DataVolume the claim is filled.
 *
 * A qcow2 cannot be converted as it streams in (qemu-img reads its tables anywhere in
 * the file) and an upload cannot be read twice or by ranges, which is how the importer
 * streams http sources; so the image is received whole into scratch first, as CDI's
 * upload server does for anything but raw.
 *
 * A sync upload (`/v1beta1/upload`) is answered when the image is on the claim; an upload
 * that fails (the client went away, a short body, an image refused) is answered with the
 * error, leaves no `disk.img` and the server waits for the next try. An async upload
 * (`/v1beta1/upload-async`, what virtctl uses) is answered once the bytes are in; a
 * conversion that fails after that ends the process with the error in the termination
 * message, and the pod's restart (restartPolicy OnFailure) waits for the next try.
 */
import { createWriteStream } from 'node:fs';
import { readFile, rename, rm } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { TLSSocket } from 'node:tls';
import { UPLOAD_HEALTHZ_PATH, UPLOAD_IMAGE_FILE, uploadPathKind } from '../common/cdi-upload';
import { FatalImportError, type ImportOutcome, type ImportPaths, runImport } from './importer';
import { formBoundary, MultipartFileExtractor } from './multipart-file';

/** What the server is started with. */
export interface UploadServerOptions {
  certFile: string;
  keyFile: string;
  /** CA bundle the proxy's client certificate must chain to. */
  clientCaFile: string;
  /** The client certificate's common name that may upload. */
  clientName: string;
  port: number;
  host?: string;
  paths: ImportPaths;
  volumeMode: 'Filesystem' | 'Block';
  /** The disk size the DataVolume asked for, bytes (the disk is grown to it). */
  imageSizeBytes?: number;
  filesystemOverhead: number;
  /**
   * Stop when idle after this time (before the serving certificate's end, as CDI's
   * DEADLINE): `done` resolves with `deadlinePassed`, and the controller starts a new pod.
   */
  deadline?: Date;
  log?: (line: string) => void;
}

/** How a server ended: the disk written, or its deadline passed with no upload done. */
export type UploadOutcome = (ImportOutcome & { deadlinePassed?: false }) | { deadlinePassed: true };

/** A running upload server. */
export interface UploadServer {
  port: number;
  /** Resolves with the written disk once an upload succeeded, or at the deadline; rejects on an async failure. */
  done: Promise<UploadOutcome>;
  close(): Promise<void>;
}

/** Content types of CDI's clone uploads (`x-cdi-content-type`), which this server does not take. */
const CONTENT_TYPE_HEADER = 'x-cdi-content-type';

class UploadError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** Starts the server; `done` settles when an upload finished (or an async one failed). */
export async function startUploadServer(o: UploadServerOptions): Promise<UploadServer> {
  const log = o.log ?? (() => {});
  const [cert, key, ca] = await Promise.all([
    readFile(o.certFile),
    readFile(o.keyFile),
    readFile(o.clientCaFile),
  ]);
  let state: 'idle' | 'busy' | 'done' = 'idle';
  let resolveDone!: (v: UploadOutcome) => void;
  let rejectDone!: (e: Error) => void;
  const done = new Promise<UploadOutcome>((res, rej) => {
    resolveDone = res;
    rejectDone = rej;
  });
  done.catch(() => {});
  const received = join(o.paths.scratchDir, UPLOAD_IMAGE_FILE);
  const partial = `${received}.tmp`;

  /** The image's bytes into scratch; errors on a short or broken body. */
  const receive = async (req: IncomingMessage, form: boolean): Promise<number> => {
    await rm(partial, { force: true });
    await rm(received, { force: true });
    let source: Readable = req;
    if (form) {
      const boundary = formBoundary(req.headers['content-type']);
      if (!boundary) throw new UploadError(400, 'an upload-form request needs a multipart/form-data body');
      source = req.pipe(new MultipartFileExtractor(boundary));
      req.on('error', (e) => source.destroy(e));
    }
    let bytes = 0;
    source.on('data', (c: Buffer) => {
      bytes += c.length;
    });
    try {
      await pipeline(source, createWriteStream(partial));
    } catch (e) {
      await rm(partial, { force: true });
      throw new UploadError(400, `receiving the image: ${(e as Error).message}`);
    }
    const declared = Number(req.headers['content-length']);
    if (!req.complete || (!form && Number.isFinite(declared) && declared !== bytes)) {
      await rm(partial, { force: true });
      throw new UploadError(
        400,
        `the upload ended after ${bytes} bytes of ${req.headers['content-length'] ?? '?'}`,
      );
    }
    await rename(partial, received);
    return bytes;
  };

  const convert = () =>
    runImport(
      {
        source: 'upload',
        contentType: 'kubevirt',
        imageSizeBytes: o.imageSizeBytes,
        extraHeaders: [],
        volumeMode: o.volumeMode,
        filesystemOverhead: o.filesystemOverhead,
      },
      o.paths,
      log,
    );

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const path = new URL(req.url ?? '/', 'https://upload').pathname;
    if (path === UPLOAD_HEALTHZ_PATH) {
      res.writeHead(200).end('OK');
      return;
    }
    const kind = uploadPathKind(path);
    if (!kind) throw new UploadError(404, `no upload path ${path.slice(0, 100)}`);
    // HEAD on the async path: the client's probe for async support (virtctl's).
    if (req.method === 'HEAD' && kind.async) {
      res.writeHead(200).end();
      return;
    }
    if (req.method !== 'POST') throw new UploadError(404, `${req.method} ${path}: use POST`);
    const sock = req.socket as TLSSocket;
    const peer = sock.authorized ? sock.getPeerCertificate() : undefined;
    if (!peer?.subject || peer.subject.CN !== o.clientName)
      throw new UploadError(401, 'the upload proxy client certificate is required');
    if (state === 'busy') throw new UploadError(503, 'an upload is in progress');
    if (state === 'done') throw new UploadError(409, 'the upload is already done');
    if (kind.archive) throw new UploadError(400, 'archive uploads are not supported (contentType archive)');
    const ct = req.headers[CONTENT_TYPE_HEADER];
    if (ct)
      throw new UploadError(
        400,
        `${CONTENT_TYPE_HEADER} ${JSON.stringify(String(ct).slice(0, 50))} is not supported`,
      );
    state = 'busy';
    try {
      const bytes = await receive(req, kind.form);
      log(`received ${bytes} bytes (${kind.async ? 'async' : 'sync'}${kind.form ? ', form' : ''})`);
      if (kind.async) res.writeHead(200).end();
      let out: ImportOutcome;
      try {
        out = await convert();
      } catch (e) {
        const err = e as Error;
        if (kind.async) {
          // Nobody to answer: the process ends with the error; the pod restarts for another try.
          log(`processing the upload failed: ${err.message}`);
          rejectDone(err);
          return;
        }
        throw new UploadError(err instanceof FatalImportError ? 400 : 500, err.message);
      }
      state = 'done';
      if (!kind.async) res.writeHead(200).end();
      resolveDone(out);
    } finally {
      if (state === 'busy') state = 'idle';
      await rm(partial, { force: true });
      await rm(received, { force: true });
    }
  };

  const server: Server = createServer(
    { cert, key, ca, requestCert: true, rejectUnauthorized: false, minVersion: 'TLSv1.2' },
    (req, res) => {
      handle(req, res).catch((e: Error) => {
        const code = e instanceof UploadError ? e.code : 500;
        log(`${req.method} ${(req.url ?? '').split('?')[0]}: ${code} ${e.message}`);
        if (!res.headersSent) res.writeHead(code, { 'content-type': 'text/plain' }).end(`${e.message}\n`);
        else res.destroy(e);
        // An unread body (a refused request) is drained, so the client sees the answer.
        req.resume();
      });
    },
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host ?? '0.0.0.0', () => resolve());
  });
  // At the deadline: stop once no upload runs (one in progress is let finish).
  let timer: NodeJS.Timeout | undefined;
  if (o.deadline) {
    const check = () => {
      if (state === 'idle') {
        log(`deadline ${o.deadline!.toISOString()} passed with no upload: stopping`);
        resolveDone({ deadlinePassed: true });
      } else if (state === 'busy') timer = setTimeout(check, 2000);
    };
    timer = setTimeout(check, Math.max(0, Math.min(o.deadline.getTime() - Date.now(), 2 ** 31 - 1)));
  }
  const close = async () => {
    if (timer) clearTimeout(timer);
    server.closeIdleConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  const port = (server.address() as { port: number }).port;
  log(`waiting for an upload on ${port}`);
  return { port, done, close };
}
