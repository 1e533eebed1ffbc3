/** The contract cases of cascading deletion (a garbage collector must run). */
import { expect } from 'vitest';
import { ConfigMapType, type KubeObject } from '../../../src/controllers/runtime';
import { type ContractSuite, clearFinalizers, eventually, gone } from './contract-support';

/** Registers the contract cases of cascading deletion (a garbage collector must run). */
export function gcContract(s: ContractSuite): void {
  // Owners are ConfigMaps: kube-controller-manager's garbage collector watches built-in kinds
  // from its start, but a new CRD's kind only after its periodic (30 s) discovery resync.
  const owned = (name: string, owner: KubeObject) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name,
      namespace: s.ns,
      ownerReferences: [
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          name: owner.metadata!.name!,
          uid: owner.metadata!.uid!,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    data: { k: 'v' },
  });

  s.gcTest('cascading deletion: background deletes dependents after the owner', async () => {
    const owner = await s.c.create(ConfigMapType, { metadata: { name: 'bg-owner', namespace: s.ns } });
    await s.c.create(ConfigMapType, owned('bg-dep', owner));
    const r = await s.c.delete(ConfigMapType, 'bg-owner', {
      namespace: s.ns,
      propagationPolicy: 'Background',
    });
    expect(r.pending).toBe(false);
    await eventually('background GC deletes the dependent', () => gone(s.c, ConfigMapType, 'bg-dep', s.ns));
  });

  s.gcTest('cascading deletion: foreground removes dependents first, then the owner', async () => {
    const owner = await s.c.create(ConfigMapType, { metadata: { name: 'fg-owner', namespace: s.ns } });
    await s.c.create(ConfigMapType, {
      ...owned('fg-dep', owner),
      metadata: { ...owned('fg-dep', owner).metadata, finalizers: ['example.com/hold'] },
    });
    const r = await s.c.delete(ConfigMapType, 'fg-owner', {
      namespace: s.ns,
      propagationPolicy: 'Foreground',
    });
    expect(r.pending).toBe(true);
    const dep = await eventually('foreground GC starts deleting the dependent', async () => {
      const d = await s.c.get(ConfigMapType, 'fg-dep', s.ns);
      return d.metadata?.deletionTimestamp ? d : undefined;
    });
    const o = await s.c.get(ConfigMapType, 'fg-owner', s.ns);
    expect(o.metadata?.finalizers).toContain('foregroundDeletion');
    expect(Date.parse(String(o.metadata?.deletionTimestamp))).not.toBeNaN();
    expect(dep.metadata?.finalizers).toContain('example.com/hold');
    await clearFinalizers(s.c, ConfigMapType, 'fg-dep', s.ns);
    await eventually('the owner goes once its dependent is gone', () =>
      gone(s.c, ConfigMapType, 'fg-owner', s.ns),
    );
  });

  s.gcTest('foreground deletion without dependents is pending, then finished by the collector', async () => {
    await s.c.create(ConfigMapType, { metadata: { name: 'fg-alone', namespace: s.ns } });
    const r = await s.c.delete(ConfigMapType, 'fg-alone', {
      namespace: s.ns,
      propagationPolicy: 'Foreground',
    });
    expect(r.pending).toBe(true);
    expect(r.object?.metadata?.finalizers).toContain('foregroundDeletion');
    await eventually('the collector removes it', () => gone(s.c, ConfigMapType, 'fg-alone', s.ns));
  });

  s.gcTest('cascading deletion: orphan keeps dependents and strips the owner reference', async () => {
    const owner = await s.c.create(ConfigMapType, { metadata: { name: 'or-owner', namespace: s.ns } });
    await s.c.create(ConfigMapType, owned('or-dep', owner));
    await s.c.delete(ConfigMapType, 'or-owner', { namespace: s.ns, propagationPolicy: 'Orphan' });
    await eventually('orphaning finishes', () => gone(s.c, ConfigMapType, 'or-owner', s.ns));
    const dep = await s.c.get(ConfigMapType, 'or-dep', s.ns);
    expect(dep.metadata?.ownerReferences ?? []).toEqual([]);
  });
}
