/**
 * nbdkit's curl plugin as the NBD export of an http(s) source, as CDI's importer reads
 * http sources (pkg/image/nbdkit.go): qemu-img converts from the export as the bytes
 * arrive, and no byte passes through node. bench:storage measured it at the speed of a
 * bare `qemu-img convert` of the URL, where node's own export (nbd-export.ts) reached
 * about 0.6x of it on two cores.
 *
 * The plugin needs the server to answer HEAD with `Accept-Ranges: bytes` (it refuses the
 * export otherwise): {@link advertisesRanges} asks first, and a server that answers ranges
 * without saying so keeps node's export. A host without nbdkit keeps it too.
 *
 * Every user string reaches nbdkit as one `key=value` argument of its own (no shell); the
 * password goes in a file only the importer reads (`password=+FILE`), never in the
 * arguments; extra CAs go in a bundle with the system's roots (`cainfo=`).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { join } from 'node:path';
import { type DownloadOptions, headersOf, trustedCas } from './http-download';
import { HEADER_LINE } from './secret-headers';
import { makeSocketDir } from './socket-dir';

const READY_MS = 10_000;

let available: boolean | undefined;

/** True when nbdkit and its curl plugin are installed (asked once). */
export function nbdkitCurlAvailable(): boolean {
  available ??=
    spawnSync('nbdkit', ['curl', '--dump-plugin'], { stdio: 'ignore', timeout: 10_000 }).status === 0;
  return available;
}

/**
 * True when a HEAD of the URL (redirects followed, as the plugin follows them) answers 2xx
 * with `Accept-Ranges: bytes`: what the curl plugin checks before it serves the export.
 */
export async function advertisesRanges(o: DownloadOptions): Promise<boolean> {
  const ca = await trustedCas(o.certDir);
  const headers = headersOf(o);
  let url = new URL(o.url);
  for (let hop = 0; hop <= 10; hop++) {
    const res = await new Promise<http.IncomingMessage | undefined>((resolve) => {
      const mod = url.protocol === 'https:' ? https : http;
      const req = mod.request(url, { method: 'HEAD', headers, ...(ca ? { ca } : {}) }, resolve);
      req.on('error', () => resolve(undefined));
      req.setTimeout(30_000, () => req.destroy());
      req.end();
    });
    if (!res) return false;
    res.resume();
    const status = res.statusCode ?? 0;
    if (status >= 300 && status < 400 && res.headers.location) {
      url = new URL(res.headers.location, url);
      continue;
    }
    return status >= 200 && status < 300 && /\bbytes\b/i.test(String(res.headers['accept-ranges'] ?? ''));
  }
  return false;
}

/** A running nbdkit export; `close` stops it and removes its files. */
export interface NbdkitExport {
  uri: string;
  /** nbdkit's first error line (qemu-img only sees EIO), if any. */
  readError(): Error | undefined;
  close(): Promise<void>;
}

/**
 * Starts nbdkit's curl plugin, read-only, on a unix socket in a private directory of its
 * own (socket-dir.ts), which also holds its pidfile, password file and CA bundle.
 */
export async function startNbdkitCurl(o: DownloadOptions): Promise<NbdkitExport> {
  const params = [
    `url=${new URL(o.url).href}`,
    'protocols=http,https',
    'timeout=60',
    'user-agent=kubevirt-ts-cdi-importer',
  ];
  for (const line of o.extraHeaders ?? []) {
    if (!HEADER_LINE.test(line))
      throw new Error(`extra header ${JSON.stringify(line)} is not one "Name: value" line`);
    params.push(`header=${line}`);
  }
  const ca = await trustedCas(o.certDir);
  const files = await makeSocketDir();
  const socket = join(files.dir, 'nbdkit.sock');
  const pidfile = join(files.dir, 'nbdkit.pid');
  try {
    if (o.basicAuth) {
      const passwordFile = join(files.dir, 'password');
      await writeFile(passwordFile, o.basicAuth.password, { mode: 0o600 });
      params.push(`user=${o.basicAuth.user}`, `password=+${passwordFile}`);
    }
    if (ca) {
      const caFile = join(files.dir, 'ca.pem');
      await writeFile(caFile, ca.join('\n'));
      params.push(`cainfo=${caFile}`);
    }
  } catch (err) {
    await files.remove();
    throw err;
  }
  const child: ChildProcess = spawn(
    'nbdkit',
    [
      '--readonly',
      '--foreground',
      '--exit-with-parent',
      '--unix',
      socket,
      '--pidfile',
      pidfile,
      'curl',
      ...params,
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => {
    // Its error lines are what matter; a chatty failure is not kept whole.
    if (stderr.length < 65_536) stderr += d.toString();
  });
  // A spawn that failed (nbdkit gone since it was found) emits 'error' and never 'exit'.
  let spawnError: Error | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.once('error', (e) => {
      spawnError = e;
      resolve();
    });
  });
  const running = () => !spawnError && child.exitCode === null && child.signalCode === null;
  const cleanup = async () => {
    if (running()) {
      child.kill('SIGTERM');
      await exited;
    }
    await files.remove();
  };
  // nbdkit writes its pidfile once it listens.
  const deadline = Date.now() + READY_MS;
  while (!existsSync(pidfile)) {
    if (!running() || Date.now() > deadline) {
      await cleanup();
      throw new Error(`nbdkit did not start: ${spawnError?.message ?? (stderr.trim() || 'no output')}`);
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    uri: `nbd+unix:///?socket=${socket}`,
    readError: () => {
      const line = stderr.split('\n').find((l) => /error:/.test(l));
      return line ? new Error(line.replace(/^nbdkit: [^:]*: error: /, '')) : undefined;
    },
    close: cleanup,
  };
}
