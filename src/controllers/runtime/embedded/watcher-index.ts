/**
 * The embedded store's watches by kind and by the equality their selector requires, so a
 * write is matched only against the watches that can see it. A node's components watch
 * their own node's objects (virt-handler's VMIs by `kubevirt.io/nodeName=<node>`, a
 * kubelet's pods by `spec.nodeName=<node>`): with 100 nodes every event had been matched
 * against every watch of its kind, the store's largest cost after its writes.
 */
import { fieldValue } from '../selectors';
import type { KubeObject } from '../types';

/** A watch as the index sees it: its storage kind and the equality its selector requires, if any. */
export interface IndexedWatch {
  kind: string;
  /** A field `path=value` every object it sees has. */
  field?: { path: string; value: string };
  /** A label `key=value` every object it sees carries (used when there is no field equality). */
  label?: { key: string; value: string };
}

interface KindWatches<W> {
  /** Watches without an equality: every event of the kind is theirs to match. */
  rest: Set<W>;
  /** By label key, then value. */
  byLabel: Map<string, Map<string, Set<W>>>;
  /** By field path (and its parts), then value. */
  byField: Map<string, { parts: string[]; byValue: Map<string, Set<W>> }>;
}

/** The watches of one store, indexed (see the file comment). */
export class WatcherIndex<W extends IndexedWatch> {
  private readonly kinds = new Map<string, KindWatches<W>>();

  add(w: W): void {
    const k = this.kindOf(w.kind);
    if (w.field) {
      let f = k.byField.get(w.field.path);
      if (!f) {
        f = { parts: w.field.path.split('.'), byValue: new Map() };
        k.byField.set(w.field.path, f);
      }
      setIn(f.byValue, w.field.value).add(w);
    } else if (w.label) setIn(mapIn(k.byLabel, w.label.key), w.label.value).add(w);
    else k.rest.add(w);
  }

  delete(w: W): void {
    const k = this.kinds.get(w.kind);
    if (!k) return;
    if (w.field) k.byField.get(w.field.path)?.byValue.get(w.field.value)?.delete(w);
    else if (w.label) k.byLabel.get(w.label.key)?.get(w.label.value)?.delete(w);
    else k.rest.delete(w);
  }

  /**
   * The watches of `kind` that may see a write of `obj` (before it: `old`): each once; the
   * caller still matches the whole selector.
   */
  candidates(kind: string, obj: KubeObject, old?: KubeObject): W[] {
    const k = this.kinds.get(kind);
    if (!k) return [];
    const out = [...k.rest];
    const addAll = (s: Set<W> | undefined) => {
      if (s) for (const w of s) out.push(w);
    };
    for (const [key, byValue] of k.byLabel) {
      const now = obj.metadata?.labels?.[key];
      const before = old?.metadata?.labels?.[key];
      if (now !== undefined) addAll(byValue.get(now));
      if (before !== undefined && before !== now) addAll(byValue.get(before));
    }
    for (const { parts, byValue } of k.byField.values()) {
      const now = fieldValue(obj, parts);
      const before = old ? fieldValue(old, parts) : now;
      addAll(byValue.get(now));
      if (before !== now) addAll(byValue.get(before));
    }
    return out;
  }

  private kindOf(kind: string): KindWatches<W> {
    let k = this.kinds.get(kind);
    if (!k) {
      k = { rest: new Set(), byLabel: new Map(), byField: new Map() };
      this.kinds.set(kind, k);
    }
    return k;
  }
}

function mapIn<V>(m: Map<string, Map<string, V>>, key: string): Map<string, V> {
  let v = m.get(key);
  if (!v) {
    v = new Map();
    m.set(key, v);
  }
  return v;
}

function setIn<W>(m: Map<string, Set<W>>, key: string): Set<W> {
  let v = m.get(key);
  if (!v) {
    v = new Set();
    m.set(key, v);
  }
  return v;
}
