/**
 * A virt-api on loopback for tests: throwaway certificates (a CA signing the serving,
 * handler-client and front-proxy-client certificates), no API server behind it, and the
 * front proxy configured with `X-Remote-User`/`X-Remote-Group`.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type { ObjectClient } from '../../../src/controllers/runtime/types';
import { startVirtApi, type VirtApi } from '../../../src/controllers/virt-api/server';
import { issue, makeCa } from '../../support/tls-certs';

/** A started virt-api and what a client needs to reach it. */
export interface VirtApiFixture {
  api: VirtApi;
  /** The CA that signed everything (trust it to reach virt-api). */
  ca: Buffer;
  /** A front-proxy client certificate virt-api accepts. */
  proxy: { cert: Buffer; key: Buffer };
  close(): Promise<void>;
}

/** Starts virt-api; every call to its API server fails ("no API server in this test"). */
export async function startVirtApiFixture(prefix: string): Promise<VirtApiFixture> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const caFiles = makeCa(dir, 'ca');
  const serving = issue(dir, caFiles, 'serving', 'virt-api', ['IP:127.0.0.1']);
  const client = issue(dir, caFiles, 'client', 'kubevirt.io:system:client:virt-handler');
  const proxyFiles = issue(dir, caFiles, 'front-proxy-client', 'front-proxy-client');
  const ca = readFileSync(caFiles.cert);
  const noApi = new Proxy(
    {},
    {
      get: () => async () => {
        throw new Error('no API server in this test');
      },
    },
  ) as ObjectClient;
  const api = await startVirtApi({
    client: noApi,
    tls: serving,
    host: '127.0.0.1',
    port: 0,
    config: () => createClusterConfig({}, { hostArchitecture: 'amd64' }),
    kubevirtNamespace: 'kubevirt',
    handler: { tls: { ...client, ca: caFiles.cert } },
    requestHeader: {
      clientCA: ca.toString(),
      allowedNames: [],
      usernameHeaders: ['X-Remote-User'],
      groupHeaders: ['X-Remote-Group'],
      extraHeaderPrefixes: [],
    },
  });
  return {
    api,
    ca,
    proxy: { cert: readFileSync(proxyFiles.cert), key: readFileSync(proxyFiles.key) },
    close: async () => {
      await api.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
