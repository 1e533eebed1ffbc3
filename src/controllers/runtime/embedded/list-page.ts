/**
 * One page of a list from the embedded store: namespace, label and field selectors, and
 * `limit`/`continue` paging in key order (the continue token is the last key returned).
 */
import { apiVersionOf } from '../resources';
import { parseFieldSelector, parseLabelSelector } from '../selectors';
import type { KubeList, KubeObject, ListOptions, ResourceType } from '../types';
import { copyOut, keyOfObj } from './store-rules';
import type { StoredObj } from './store-types';

/**
 * The objects of one kind (`all`, keyed by storage key) that `options` selects, at
 * resourceVersion `rv`; copies, or read-only views for the REST server (`view`: store-rules' SERVING).
 */
export function listPage<T extends KubeObject>(
  type: ResourceType,
  all: ReadonlyMap<string, StoredObj>,
  options: ListOptions,
  rv: number,
  view = false,
): KubeList<T> {
  const label = parseLabelSelector(options.labelSelector);
  const field = parseFieldSelector(options.fieldSelector);
  const ns = type.namespaced ? options.namespace : undefined;
  let keys = [...all.keys()].sort();
  if (options.continue) {
    const after = Buffer.from(options.continue, 'base64url').toString();
    keys = keys.filter((k) => k > after);
  }
  const items: T[] = [];
  let cont: string | undefined;
  for (const k of keys) {
    const obj = all.get(k)!;
    if (ns && obj.metadata.namespace !== ns) continue;
    if (!label.matches(obj.metadata.labels) || !field.matches(obj)) continue;
    if (options.limit && items.length === options.limit) {
      cont = Buffer.from(keyOfObj(items[items.length - 1] as StoredObj)).toString('base64url');
      break;
    }
    items.push(copyOut(type, obj, view) as T);
  }
  return {
    apiVersion: apiVersionOf(type),
    kind: `${type.kind}List`,
    metadata: { resourceVersion: String(rv), ...(cont ? { continue: cont } : {}) },
    items,
  };
}
