/**
 * The kinds `get` lists besides VMs and VMIs: every other KubeVirt kind local mode serves
 * (`kubevirtTypes`), by the names kubectl accepts (kind, singular, plural, short names
 * from the API's kind table), printed with the kind's CRD printer columns as kubectl does.
 */
import { cdiKinds } from '../../api/cdi/kinds';
import { findKind, type KindInfo, type PrinterColumn } from '../../api/groups';
import { kubevirtTypes } from '../../controllers/runtime/resources';
import type { KubeObject, ResourceType } from '../../controllers/runtime/types';
import { printable } from '../local/progress';

/** A served kind with its table entry. */
export interface ListedKind {
  type: ResourceType;
  info: KindInfo;
}

/** The served KubeVirt kind `name` names (case-insensitive), if any. */
export function findListedKind(name: string): ListedKind | undefined {
  const n = name.toLowerCase();
  for (const type of kubevirtTypes) {
    const info =
      findKind(type.group, type.kind) ??
      (cdiKinds.find((k) => k.group === type.group && k.kind === type.kind) as KindInfo | undefined);
    if (!info) continue;
    const names = [info.kind.toLowerCase(), info.singular, info.plural, ...(info.shortNames ?? [])];
    if (names.includes(n)) return { type, info };
  }
  return undefined;
}

/** The plural names of the kinds {@link findListedKind} knows, for error messages. */
export function listedKindNames(): string[] {
  return kubevirtTypes.map((t) => t.plural);
}

/** A printer column's value: only dotted paths (`.spec.replicas`) are read; others print empty. */
function columnValue(obj: KubeObject, col: PrinterColumn, age: (ts: string | undefined) => string): string {
  if (!/^(\.[A-Za-z0-9_]+)+$/.test(col.jsonPath)) return '';
  let v: unknown = obj;
  for (const key of col.jsonPath.slice(1).split('.')) {
    v = v && typeof v === 'object' ? (v as Record<string, unknown>)[key] : undefined;
  }
  if (col.type === 'date') return age(typeof v === 'string' ? v : undefined);
  return v === undefined || v === null ? '' : printable(String(v));
}

/**
 * kubectl's table for a kind without its own columns here: NAMESPACE (with -A, namespaced
 * kinds only), NAME, then its printer columns (priority 1 only with `wide`), else AGE.
 */
export function listedRows(
  k: ListedKind,
  items: KubeObject[],
  allNamespaces: boolean,
  wide: boolean,
  age: (ts: string | undefined) => string,
): string[][] {
  const showNs = allNamespaces && k.type.namespaced;
  const declared = k.info.printerColumns.filter((c) => wide || !c.priority);
  const cols: PrinterColumn[] = declared.length
    ? declared
    : [{ name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' }];
  return [
    [...(showNs ? ['NAMESPACE'] : []), 'NAME', ...cols.map((c) => c.name.toUpperCase())],
    ...items.map((o) => [
      ...(showNs ? [printable(o.metadata?.namespace ?? '')] : []),
      printable(o.metadata?.name ?? ''),
      ...cols.map((c) => columnValue(o, c, age)),
    ]),
  ];
}
