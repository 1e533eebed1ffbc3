import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { EmbeddedStore } from '../../../src/controllers/runtime';
import { objectClientContract } from './contract';

objectClientContract('embedded store (in process)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvts-contract-'));
  const store = await EmbeddedStore.open({ dir });
  return {
    client: store,
    garbageCollector: true,
    compact: async () => store.compactHistory(),
    close: async () => {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});
