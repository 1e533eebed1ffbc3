/**
 * The set-up the embedded REST server tests share: a fresh in-memory store served on a
 * socket in a temporary directory for the file's tests, and raw HTTP requests to it.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { type EmbeddedServer, EmbeddedStore, serveEmbeddedStore } from '../../../../src/controllers/runtime';

/** What {@link useEmbeddedServer} starts; the fields are set from beforeAll on. */
export interface ServerHarness {
  dir: string;
  store: EmbeddedStore;
  server: EmbeddedServer;
  /** Sends one request as it is (no client-side checks) and resolves with status and body. */
  raw(
    method: string,
    p: string,
    body?: string,
    headers?: Record<string, string>,
  ): Promise<{ status: number; body: string }>;
}

/**
 * Registers beforeAll/afterAll hooks that open a store, serve it on `<tmp>/api.sock`, run
 * `seed` on it, and close and remove everything after the file's tests.
 */
export function useEmbeddedServer(
  tmpPrefix: string,
  seed?: (store: EmbeddedStore) => Promise<void>,
): ServerHarness {
  const h = {
    raw(method: string, p: string, body?: string, headers: Record<string, string> = {}) {
      return new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.request({ socketPath: h.server.socketPath, method, path: p, headers }, (res) => {
          let b = '';
          res.on('data', (d) => {
            b += d;
          });
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: b }));
        });
        req.on('error', reject);
        // The server cuts a too-large upload off after answering 413: the rest of our write fails.
        req.on('socket', (sock) => sock.on('error', () => {}));
        req.end(body);
      });
    },
  } as ServerHarness;
  beforeAll(async () => {
    h.dir = fs.mkdtempSync(path.join(os.tmpdir(), tmpPrefix));
    h.store = await EmbeddedStore.open();
    h.server = await serveEmbeddedStore(h.store, path.join(h.dir, 'api.sock'));
    await seed?.(h.store);
  });
  afterAll(async () => {
    await h.server.close();
    await h.store.close();
    fs.rmSync(h.dir, { recursive: true, force: true });
  });
  return h;
}
