/** The embedded store against hostile writes: unbounded growth, journal failures. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  ConfigMapType,
  CustomResourceDefinitionType,
  EmbeddedStore,
  type KubeObject,
  VirtualMachineType,
} from '../../../../src/controllers/runtime';
import { Journal } from '../../../../src/controllers/runtime/embedded/journal';

const dirs: string[] = [];
const stores: EmbeddedStore[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
async function open(dir?: string): Promise<EmbeddedStore> {
  const s = await EmbeddedStore.open(dir ? { dir } : {});
  stores.push(s);
  return s;
}
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'kvts-storeh-'));
  dirs.push(d);
  return d;
}
const cm = (name: string, data: Record<string, unknown> = {}) =>
  ({ metadata: { name, namespace: 'default' }, data }) as KubeObject;

describe('EmbeddedStore: size bounds', () => {
  it('refuses a JSON patch whose copies grow the object past the copy limit, and keeps the object', async () => {
    const s = await open();
    await s.create(ConfigMapType, cm('grow', { v: 'x'.repeat(1000) }));
    const rv = s.resourceVersion;
    for (const n of [12, 60]) {
      const ops = Array.from({ length: n }, (_, i) => ({ op: 'copy', from: '/data', path: `/data/k${i}` }));
      const err = await s
        .patch(ConfigMapType, 'grow', ops, { namespace: 'default', type: 'json' })
        .catch((e) => e);
      expect(err.code).toBe(413);
      expect(err.message).toMatch(/copy operations copy more than 3145728 bytes/);
    }
    expect(s.resourceVersion).toBe(rv);
    expect(
      Object.keys((await s.get<KubeObject & { data: object }>(ConfigMapType, 'grow', 'default')).data),
    ).toEqual(['v']);
  });

  it('refuses a JSON patch of more than 10000 operations', async () => {
    const s = await open();
    await s.create(ConfigMapType, cm('ops'));
    const ops = Array.from({ length: 10_001 }, () => ({ op: 'test', path: '/data', value: {} }));
    const err = await s
      .patch(ConfigMapType, 'ops', ops, { namespace: 'default', type: 'json' })
      .catch((e) => e);
    expect(err.code).toBe(413);
    expect(err.message).toMatch(/10000, got 10001/);
  });

  it('refuses to store an object over 1.5 MiB serialized, by create, update or patch', async () => {
    const s = await open();
    const big = 'é'.repeat(800 * 1024); // 1.6 MB as UTF-8, 0.8 M characters
    const err = await s.create(ConfigMapType, cm('big', { big })).catch((e) => e);
    expect(err.code).toBe(413);
    expect(err.message).toMatch(/ConfigMap "big" is too large: \d+ bytes serialized, the limit is 1572864/);
    const rv = s.resourceVersion;
    await s.create(ConfigMapType, cm('small', { a: 'x'.repeat(1024 * 1024) }));
    const p = await s
      .patch(ConfigMapType, 'small', [{ op: 'copy', from: '/data/a', path: '/data/b' }], {
        namespace: 'default',
        type: 'json',
      })
      .catch((e) => e);
    expect(p.code).toBe(413);
    expect(Number(s.resourceVersion)).toBe(Number(rv) + 1);
    // The refused write changed nothing: no watch event, no resourceVersion.
    expect(
      Object.keys((await s.get<KubeObject & { data: object }>(ConfigMapType, 'small', 'default')).data),
    ).toEqual(['a']);
  });
});

describe('EmbeddedStore: a failed journal write', () => {
  it('answers that write with 500 and keeps the store writable; the disk is healed from memory', async () => {
    const dir = tmp();
    const s = await EmbeddedStore.open({ dir });
    const real = Journal.prototype.write;
    let calls = 0;
    vi.spyOn(Journal.prototype, 'write').mockImplementation(function (this: Journal, lines: string[]) {
      if (calls++ === 0) {
        // A torn write: half a line reaches the file, then the disk is full.
        fs.appendFileSync(path.join(dir, 'journal.jsonl'), lines[0].slice(0, 20));
        throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
      }
      return real.call(this, lines);
    });
    const err = await s.create(ConfigMapType, cm('a', { k: '1' })).catch((e) => e);
    expect(err.code).toBe(500);
    expect(err.message).toMatch(/ENOSPC/);
    for (const n of ['b', 'c']) await s.create(ConfigMapType, cm(n, { k: n }));
    await s.patch(ConfigMapType, 'b', { data: { k: 'B' } }, { namespace: 'default', type: 'merge' });
    const names = (await s.list(ConfigMapType, { namespace: 'default' })).items.map((o) => o.metadata?.name);
    const rv = s.resourceVersion;
    await s.close();

    const s2 = await open(dir);
    expect(s2.resourceVersion).toBe(rv);
    expect(
      (await s2.list(ConfigMapType, { namespace: 'default' })).items.map((o) => o.metadata?.name),
    ).toEqual(names);
    expect((await s2.get<KubeObject & { data: object }>(ConfigMapType, 'b', 'default')).data).toEqual({
      k: 'B',
    });
  });
});

const crd = (
  group: string,
  plural: string,
  kind: string,
  name = `${plural}.${group}`,
  versions = ['v1', 'v2'],
) =>
  ({
    metadata: { name },
    spec: {
      group,
      scope: 'Namespaced',
      names: { kind, plural },
      versions: versions.map((v) => ({ name: v, served: true, storage: v === versions[0] })),
    },
  }) as KubeObject;

describe('EmbeddedStore: CRDs cannot take over a built-in kind', () => {
  it('refuses a CRD for a built-in plural or kind, in any version, by create or update', async () => {
    const s = await open();
    await s.create(VirtualMachineType, {
      metadata: { name: 'vm', namespace: 'default' },
      spec: {},
    } as KubeObject);
    for (const c of [
      crd('kubevirt.io', 'virtualmachines', 'Hijack'),
      crd('kubevirt.io', 'hijacks', 'VirtualMachine'),
      crd('kubevirt.io', 'virtualmachines', 'VirtualMachine', 'virtualmachines.kubevirt.io', ['v9']),
      crd('coordination.k8s.io', 'leases', 'Lease'),
    ]) {
      const err = await s.create(CustomResourceDefinitionType, c).catch((e) => e);
      expect([c.metadata?.name, err.code]).toEqual([c.metadata?.name, 422]);
      expect(err.message).toMatch(/served by a built-in API/);
    }
    // A legitimate CRD cannot be turned into a takeover by an update either.
    const ok = await s.create(CustomResourceDefinitionType, crd('example.com', 'things', 'Thing'));
    const spec = ok.spec as { names: { plural: string } };
    const err = await s
      .update(CustomResourceDefinitionType, {
        ...ok,
        spec: { ...spec, group: 'kubevirt.io', names: { kind: 'VirtualMachine', plural: 'virtualmachines' } },
      })
      .catch((e) => e);
    expect(err.code).toBe(422);
    expect(s.resolveType('kubevirt.io', 'v1', 'virtualmachines')).toBe(VirtualMachineType);
    expect(s.resolveType('kubevirt.io', 'v9', 'virtualmachines')).toBeUndefined();
    expect(
      (await s.list(VirtualMachineType, { namespace: 'default' })).items.map((o) => o.metadata?.name),
    ).toEqual(['vm']);
  });

  it('requires the name <plural>.<group> and a group with a dot, as the API server', async () => {
    const s = await open();
    for (const c of [
      crd('example.com', 'things', 'Thing', 'other.example.com'),
      crd('nodot', 'things', 'Thing'),
    ]) {
      const err = await s.create(CustomResourceDefinitionType, c).catch((e) => e);
      expect(err.code).toBe(422);
    }
  });
});
