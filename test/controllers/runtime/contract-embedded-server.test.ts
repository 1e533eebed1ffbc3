import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedStore, KubeClient, serveEmbeddedStore } from '../../../src/controllers/runtime';
import { objectClientContract } from './contract';

// The embedded store served on a unix socket, reached through the Kubernetes backend.
objectClientContract('embedded store over its unix-socket REST server (KubeClient)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvts-contract-srv-'));
  const store = await EmbeddedStore.open({ dir: path.join(dir, 'data') });
  const server = await serveEmbeddedStore(store, path.join(dir, 'api.sock'));
  const client = KubeClient.fromSocket(server.socketPath, { qps: 1000, burst: 1000 });
  return {
    client,
    garbageCollector: true,
    compact: async () => store.compactHistory(),
    close: async () => {
      client.close();
      await server.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});
