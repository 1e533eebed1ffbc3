/**
 * Patch algorithms applied by the embedded store: JSON merge patch (RFC 7386) and JSON
 * patch (RFC 6902). Pure functions over plain JSON values; inputs are never mutated.
 */
import { MAX_OBJECT_DEPTH, nestedDeeperThan } from '../../api/json-bounds';
import { ApiError, badRequest, InvalidError } from './errors';
import type { JsonPatchOp } from './types';

type Json = unknown;

function isObject(v: Json): v is Record<string, Json> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** RFC 7386: objects merge recursively, `null` deletes a key, anything else replaces. */
export function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return structuredClone(patch);
  const out: Record<string, Json> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function unescapeToken(token: string): string {
  return token.replace(/~1/g, '/').replace(/~0/g, '~');
}

function parsePointer(path: string): string[] {
  if (path === '') return [];
  if (!path.startsWith('/')) throw badRequest(`invalid JSON pointer "${path}": must start with "/"`);
  return path.slice(1).split('/').map(unescapeToken);
}

/**
 * 422 unless `value` placed at `tokens` stays within MAX_OBJECT_DEPTH (the document is a
 * level, each token one more): moves nesting a subtree into a sibling, repeated, built
 * objects thousands of levels deep that the store could then not serialise (a 500).
 */
function checkPlacedDepth(value: Json, tokens: string[], i: number, op: string, path: string): void {
  const room = MAX_OBJECT_DEPTH - 1 - tokens.length;
  if (room < 0 ? value !== null && typeof value === 'object' : nestedDeeperThan(value, room)) {
    throw unprocessable(
      `JSON patch operation ${i} (${op} to ${JSON.stringify(path).slice(0, 200)}) would nest the object more than ${MAX_OBJECT_DEPTH} levels deep`,
    );
  }
}

/** 422 as the API server answers a patch that cannot be applied. */
/** 422 Invalid, as the same error read back over HTTP is (a failed `test` is a patch's conflict). */
function unprocessable(message: string): ApiError {
  return new InvalidError(422, 'Invalid', message);
}

function arrayIndex(arr: Json[], token: string, forAdd: boolean, path: string): number {
  if (forAdd && token === '-') return arr.length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw unprocessable(`JSON patch path "${path}": bad array index`);
  const i = Number(token);
  if (i > arr.length || (!forAdd && i === arr.length)) {
    throw unprocessable(`JSON patch path "${path}": index ${i} out of range`);
  }
  return i;
}

function get(doc: Json, tokens: string[], path: string): Json {
  let cur = doc;
  for (const t of tokens) {
    if (Array.isArray(cur)) cur = cur[arrayIndex(cur, t, false, path)];
    else if (isObject(cur) && Object.hasOwn(cur, t)) cur = cur[t];
    else throw unprocessable(`JSON patch path "${path}" does not exist`);
  }
  return cur;
}

/**
 * The value a `test` compares: as the API server's json-patch (evanphx v4), a member
 * missing from an object that exists reads as null, so `test /data null` holds for an
 * object without `data` (upstream's virtctl credentials relies on it).
 */
function testedValue(doc: Json, tokens: string[], path: string): Json {
  if (tokens.length === 0) return doc;
  const parent = parentOf(doc, tokens, path);
  const last = tokens[tokens.length - 1];
  if (isObject(parent) && !Array.isArray(parent) && !Object.hasOwn(parent, last)) return null;
  return get(doc, tokens, path);
}

/** Returns the container of the last token (already cloned along the way by the caller). */
function parentOf(doc: Json, tokens: string[], path: string): Json {
  return get(doc, tokens.slice(0, -1), path);
}

function add(doc: Json, tokens: string[], value: Json, path: string): Json {
  if (tokens.length === 0) return value;
  const parent = parentOf(doc, tokens, path);
  const last = tokens[tokens.length - 1];
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, true, path), 0, value);
  else if (isObject(parent)) parent[last] = value;
  else throw unprocessable(`JSON patch path "${path}": parent is not a container`);
  return doc;
}

function remove(doc: Json, tokens: string[], path: string): Json {
  if (tokens.length === 0) throw unprocessable('JSON patch cannot remove the whole document');
  const parent = parentOf(doc, tokens, path);
  const last = tokens[tokens.length - 1];
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, false, path), 1);
  else if (isObject(parent) && Object.hasOwn(parent, last)) delete parent[last];
  else throw unprocessable(`JSON patch path "${path}" does not exist`);
  return doc;
}

/** Structural equality of JSON values (object key order ignored), without allocating. */
function deepEqual(a: Json, b: Json): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ao = a as Record<string, Json>;
  const bo = b as Record<string, Json>;
  let n = 0;
  for (const k in ao) {
    if (ao[k] === undefined) continue;
    n++;
    if (!deepEqual(ao[k], bo[k])) return false;
  }
  for (const k in bo) if (bo[k] !== undefined) n--;
  return n === 0;
}

/** Most operations in one JSON patch, as the API server (maxJSONPatchOperations). */
export const MAX_JSON_PATCH_OPERATIONS = 10_000;
/**
 * Most bytes (serialized JSON) all `copy` operations of one patch may copy, as the API
 * server's AccumulatedCopySizeLimit (its request size limit, 3 MiB): without it a 2 KB
 * patch of repeated copies doubles the object each time.
 */
export const MAX_JSON_PATCH_COPY_BYTES = 3 * 1024 * 1024;

/** RFC 6902 over a deep copy of `doc`; a failing `test` or a bad path throws 422. */
export function jsonPatch(doc: Json, ops: JsonPatchOp[]): Json {
  if (!Array.isArray(ops)) throw badRequest('a JSON patch must be an array of operations');
  if (ops.length > MAX_JSON_PATCH_OPERATIONS) {
    throw new ApiError(
      413,
      'RequestEntityTooLarge',
      `the allowed number of operations in a JSON patch is ${MAX_JSON_PATCH_OPERATIONS}, got ${ops.length}`,
    );
  }
  let out = structuredClone(doc);
  let copied = 0;
  for (const [i, op] of ops.entries()) {
    if (op === null || typeof op !== 'object' || typeof op.path !== 'string')
      throw badRequest(`JSON patch operation ${i}: "path" is required`);
    if (op.op === 'move' || op.op === 'copy') {
      if (typeof op.from !== 'string') throw badRequest(`JSON patch operation ${i}: "from" is required`);
    }
    const tokens = parsePointer(op.path);
    switch (op.op) {
      case 'add':
        checkPlacedDepth(op.value, tokens, i, 'add', op.path);
        out = add(out, tokens, structuredClone(op.value), op.path);
        break;
      case 'remove':
        out = remove(out, tokens, op.path);
        break;
      case 'replace':
        get(out, tokens, op.path);
        checkPlacedDepth(op.value, tokens, i, 'replace', op.path);
        out = add(remove(out, tokens, op.path), tokens, structuredClone(op.value), op.path);
        break;
      case 'move': {
        const from = parsePointer(op.from ?? '');
        const v = get(out, from, op.from ?? '');
        checkPlacedDepth(v, tokens, i, 'move', op.path);
        out = add(remove(out, from, op.from ?? ''), tokens, v, op.path);
        break;
      }
      case 'copy': {
        const src = get(out, parsePointer(op.from ?? ''), op.from ?? '');
        checkPlacedDepth(src, tokens, i, 'copy', op.path);
        copied += JSON.stringify(src ?? null).length;
        if (copied > MAX_JSON_PATCH_COPY_BYTES) {
          throw new ApiError(
            413,
            'RequestEntityTooLarge',
            `JSON patch operation ${i}: the copy operations copy more than ${MAX_JSON_PATCH_COPY_BYTES} bytes in all`,
          );
        }
        const v = structuredClone(src);
        out = add(out, tokens, v, op.path);
        break;
      }
      case 'test':
        if (!deepEqual(testedValue(out, tokens, op.path), op.value)) {
          throw unprocessable(`JSON patch test operation failed at "${op.path}"`);
        }
        break;
      default:
        throw badRequest(`JSON patch operation ${i}: unknown op "${(op as { op: string }).op}"`);
    }
  }
  return out;
}

export { deepEqual as jsonEqual };
