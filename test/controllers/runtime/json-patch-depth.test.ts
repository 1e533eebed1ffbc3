/**
 * JSON patch operations cannot build an object past MAX_OBJECT_DEPTH: each `move` below
 * nests the document one level deeper, and 3,000 of them made an object the embedded store
 * then failed to store (a 500). The patch is refused with 422 naming the operation and
 * the limit; `add` and `copy` at a deep path are bounded the same way.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MAX_OBJECT_DEPTH } from '../../../src/api/json-bounds';
import { ConfigMapType, EmbeddedStore } from '../../../src/controllers/runtime';
import { ApiError } from '../../../src/controllers/runtime/errors';
import { jsonPatch } from '../../../src/controllers/runtime/patch';
import type { JsonPatchOp } from '../../../src/controllers/runtime/types';

/** `n` rounds of add-move-move, each nesting `/c` one level deeper. */
function nestingMoves(n: number): JsonPatchOp[] {
  return Array.from({ length: n }, () => [
    { op: 'add', path: '/n', value: {} },
    { op: 'move', from: '/c', path: '/n/c' },
    { op: 'move', from: '/n', path: '/c' },
  ]).flat() as JsonPatchOp[];
}

function refusal(doc: unknown, ops: JsonPatchOp[]): ApiError {
  try {
    jsonPatch(doc as never, ops);
  } catch (e) {
    return e as ApiError;
  }
  throw new Error('the patch was applied');
}

describe('JSON patch depth', () => {
  it('refuses moves that nest the object past the limit with 422', () => {
    const e = refusal({ c: {} }, nestingMoves(3000));
    expect(e).toBeInstanceOf(ApiError);
    expect(e.code).toBe(422);
    expect(e.message).toMatch(
      new RegExp(
        `^JSON patch operation \\d+ \\(move to "/n/c"\\) would nest the object more than ${MAX_OBJECT_DEPTH} levels deep$`,
      ),
    );
  });

  it('applies moves up to the limit', () => {
    const out = jsonPatch({ c: {} } as never, nestingMoves(MAX_OBJECT_DEPTH - 3)) as Record<string, unknown>;
    let depth = 0;
    for (let v: unknown = out; v && typeof v === 'object'; v = (v as Record<string, unknown>).c) depth++;
    expect(depth).toBe(MAX_OBJECT_DEPTH - 1);
  });

  it('refuses add and copy of a deep value at a deep path', () => {
    let deep: unknown = {};
    for (let i = 0; i < 400; i++) deep = { d: deep };
    const doc = { a: deep, b: {} };
    const path = `/a${'/d'.repeat(399)}/x`;
    expect(refusal(doc, [{ op: 'copy', from: '/a', path } as JsonPatchOp]).code).toBe(422);
    expect(refusal(doc, [{ op: 'add', path, value: deep } as JsonPatchOp]).code).toBe(422);
  });

  it('the embedded store answers such a patch with 422 and keeps the object', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kvts-patch-depth-'));
    const store = await EmbeddedStore.open({ dir });
    try {
      await store.create(ConfigMapType, {
        metadata: { name: 'a', namespace: 'default' },
        spec: { c: {} },
      } as never);
      const ops = nestingMoves(3000).map((op) => ({
        ...op,
        path: `/spec${op.path}`,
        ...(op.from ? { from: `/spec${op.from}` } : {}),
      }));
      const e = await store.patch(ConfigMapType, 'a', ops, { namespace: 'default', type: 'json' }).then(
        () => undefined,
        (err: ApiError) => err,
      );
      expect(e?.code).toBe(422);
      expect(e?.message).toMatch(/would nest the object more than 512 levels deep$/);
      expect(((await store.get(ConfigMapType, 'a', 'default')) as never as { spec: unknown }).spec).toEqual({
        c: {},
      });
    } finally {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
