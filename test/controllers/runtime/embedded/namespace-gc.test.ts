/**
 * Deleting a namespace with content: the embedded garbage collector empties and removes it
 * in one run without logging an error (it logged a TypeError, and a second run finished).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  ConfigMapType,
  EmbeddedStore,
  type KubeObject,
  NamespaceType,
} from '../../../../src/controllers/runtime';
import { setRuntimeLog } from '../../../../src/controllers/runtime/runtime-log';
import { eventually } from '../contract';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvts-nsgc-'));
afterEach(() => {
  setRuntimeLog(undefined);
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('embedded garbage collector: namespace deletion', () => {
  it('empties and removes a namespace with owned and unowned content, logging nothing', async () => {
    const logged: string[] = [];
    setRuntimeLog({ warn: (m) => logged.push(m), error: (m) => logged.push(m) });
    const store = await EmbeddedStore.open({ dir });
    try {
      await store.create(NamespaceType, { metadata: { name: 'doomed' } });
      const owner = await store.create(ConfigMapType, { metadata: { name: 'owner', namespace: 'doomed' } });
      for (let i = 0; i < 5; i++) {
        await store.create(ConfigMapType, {
          metadata: {
            name: `dep${i}`,
            namespace: 'doomed',
            ownerReferences: [
              {
                apiVersion: 'v1',
                kind: 'ConfigMap',
                name: 'owner',
                uid: (owner as KubeObject).metadata?.uid as string,
              },
            ],
          },
        } as KubeObject);
        await store.create(ConfigMapType, { metadata: { name: `plain${i}`, namespace: 'doomed' } });
      }
      await store.delete(NamespaceType, 'doomed');
      await eventually('the namespace to be gone', async () =>
        (await store.list(NamespaceType)).items.every((n) => n.metadata?.name !== 'doomed'),
      );
      expect((await store.list(ConfigMapType, { namespace: 'doomed' })).items).toEqual([]);
      expect(logged).toEqual([]);
    } finally {
      await store.close();
    }
  });
});
