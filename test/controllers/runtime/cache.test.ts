import { describe, expect, it } from 'vitest';
import {
  CONTROLLER_UID_INDEX,
  Indexer,
  type KubeObject,
  NAMESPACE_INDEX,
} from '../../../src/controllers/runtime';

const obj = (ns: string, name: string, node?: string, owner?: string): KubeObject => ({
  metadata: {
    name,
    namespace: ns,
    ownerReferences: owner
      ? [{ apiVersion: 'v1', kind: 'X', name: 'o', uid: owner, controller: true }]
      : undefined,
  },
  spec: { node },
});

describe('Indexer', () => {
  it('indexes by namespace, controller uid and custom functions, and keeps indexes current', () => {
    const ix = new Indexer();
    ix.addIndex('node', (o) =>
      (o.spec as { node?: string }).node ? [(o.spec as { node: string }).node] : [],
    );
    ix.set(obj('a', 'p1', 'n1', 'u1'));
    ix.set(obj('a', 'p2', 'n2'));
    ix.set(obj('b', 'p3', 'n1', 'u1'));
    expect(
      ix
        .byIndex(NAMESPACE_INDEX, 'a')
        .map((o) => o.metadata?.name)
        .sort(),
    ).toEqual(['p1', 'p2']);
    expect(
      ix
        .byIndex('node', 'n1')
        .map((o) => o.metadata?.name)
        .sort(),
    ).toEqual(['p1', 'p3']);
    expect(ix.byIndex(CONTROLLER_UID_INDEX, 'u1')).toHaveLength(2);
    ix.set(obj('a', 'p1', 'n2'));
    expect(ix.byIndex('node', 'n1').map((o) => o.metadata?.name)).toEqual(['p3']);
    expect(ix.byIndex(CONTROLLER_UID_INDEX, 'u1')).toHaveLength(1);
    expect(ix.delete('b/p3')?.metadata?.name).toBe('p3');
    expect(ix.byIndex('node', 'n1')).toEqual([]);
    expect(ix.getByName('p2', 'a')?.metadata?.name).toBe('p2');
    expect(ix.size).toBe(2);
    expect(() => ix.byIndex('nope', 'x')).toThrow(/no index named "nope"/);
    ix.addIndex('late', (o) => [o.metadata!.name!]);
    expect(ix.byIndex('late', 'p2')).toHaveLength(1);
  });
});
