import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EmbeddedStore } from '../../../../src/controllers/runtime/embedded/store';
import { ConflictError } from '../../../../src/controllers/runtime/errors';
import { Expectations } from '../../../../src/controllers/runtime/expectations';
import { ConfigMapType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { deleteOwned } from '../../../../src/controllers/virt-controller/services/delete-owned';

describe('deleteOwned', () => {
  let store: EmbeddedStore;
  let events: string[];
  let expectations: Expectations;
  const owner = {
    apiVersion: 'v1',
    kind: 'Owner',
    metadata: { name: 'o', namespace: 'default', uid: 'u-o' },
  };
  const deps = () => ({
    client: store,
    expectations,
    recorder: {
      event: (_o: unknown, type: string, reason: string, msg: string) =>
        events.push(`${type} ${reason} ${msg}`),
    },
  });
  const request = (victims: KubeObject[], deleted: string[] = []) => ({
    key: 'default/o',
    owner,
    resource: ConfigMapType,
    victims,
    deleted: (v: KubeObject) => `deleted ${v.metadata?.name}`,
    failed: (v: KubeObject, err: Error) => `failed ${v.metadata?.name}: ${err.constructor.name}`,
    onDeleted: () => deleted.push('x'),
  });
  const make = (name: string): Promise<KubeObject> =>
    store.create<KubeObject>(ConfigMapType, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: 'default' },
    });

  beforeEach(async () => {
    store = await EmbeddedStore.open();
    events = [];
    expectations = new Expectations();
  });
  afterEach(async () => {
    await store.close?.();
  });

  it('deletes each victim, records an event each, and expects their deletions', async () => {
    const a = await make('a');
    const b = await make('b');
    const keep = await make('keep');
    const writes: string[] = [];
    await deleteOwned(deps(), request([a, b], writes));
    const left = await store.list(ConfigMapType, { namespace: 'default' });
    expect(left.items.map((o) => o.metadata?.name)).toEqual([keep.metadata?.name]);
    expect(events).toEqual(['Normal SuccessfulDelete deleted a', 'Normal SuccessfulDelete deleted b']);
    expect(writes).toHaveLength(2);
    // Nothing observed yet: the key waits for the informer to see both deletions.
    expect(expectations.pending('default/o')).toEqual({ add: 0, del: 2 });
  });

  it('counts an object already gone as deleted and lowers the expectation for it', async () => {
    const a = await make('a');
    const gone = await make('gone');
    await store.delete(ConfigMapType, 'gone', { namespace: 'default' });
    await deleteOwned(deps(), request([gone, a]));
    expect(events).toEqual(['Normal SuccessfulDelete deleted a']);
    expect(expectations.pending('default/o')).toEqual({ add: 0, del: 1 });
  });

  it('never deletes a same-named successor: the UID precondition fails, the pass stops with a Warning event', async () => {
    const old = await make('a');
    await store.delete(ConfigMapType, 'a', { namespace: 'default' });
    const successor = await make('a');
    const b = await make('b');
    await expect(deleteOwned(deps(), request([old, b]))).rejects.toBeInstanceOf(ConflictError);
    expect(events).toEqual(['Warning FailedDelete failed a: ConflictError']);
    const uids = (await store.list(ConfigMapType, { namespace: 'default' })).items.map(
      (o) => o.metadata?.uid,
    );
    expect(uids).toContain(successor.metadata?.uid);
    expect(expectations.pending('default/o')).toEqual({ add: 0, del: 1 });
  });
});
