/**
 * The JSON patch the VMI controller sends for a VMI already handed to its node (phase
 * Scheduled or Running), as upstream's prepareVMIPatch: virt-handler updates such a VMI,
 * so the controller writes only the fields it changed, each tested against the value it
 * computed from, instead of updating the whole object (which would conflict with every
 * handler write, or with a patch overwrite the handler's fields).
 */
import type { VirtualMachineInstance } from '../../../api/generated/types';
import { sameJson } from '../../runtime/same-json';
import type { JsonPatchOp } from '../../runtime/types';

/** RFC 6901 escaping of one path segment. */
const segment = (k: string) => k.replaceAll('~', '~0').replaceAll('/', '~1');

/** Ops turning `from[key]` into `to[key]` for each differing key, tested first; [] when equal. */
function fieldOps(base: string, from: Record<string, unknown>, to: Record<string, unknown>): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [];
  for (const k of new Set([...Object.keys(from), ...Object.keys(to)])) {
    const [a, b] = [from[k], to[k]];
    if (sameJson(a, b)) continue;
    const path = `${base}/${segment(k)}`;
    if (a === undefined) ops.push({ op: 'add', path, value: b });
    else if (b === undefined) ops.push({ op: 'test', path, value: a }, { op: 'remove', path });
    else ops.push({ op: 'test', path, value: a }, { op: 'replace', path, value: b });
  }
  return ops;
}

/**
 * The patch from `old` (as read from the cache) to `next` over status fields, labels and
 * finalizers (the parts the controller computes); [] when nothing changed.
 */
export function vmiPatch(old: VirtualMachineInstance, next: VirtualMachineInstance): JsonPatchOp[] {
  const ops: JsonPatchOp[] = [];
  const [os, ns] = [old.status, next.status];
  if (!sameJson(os, ns)) {
    if (!os) ops.push({ op: 'add', path: '/status', value: ns });
    else
      ops.push(...fieldOps('/status', os as Record<string, unknown>, (ns ?? {}) as Record<string, unknown>));
  }
  for (const f of ['labels', 'finalizers'] as const) {
    const [a, b] = [old.metadata?.[f], next.metadata?.[f]];
    if (sameJson(a, b)) continue;
    const path = `/metadata/${f}`;
    if (a === undefined) ops.push({ op: 'add', path, value: b });
    else if (b === undefined) ops.push({ op: 'test', path, value: a }, { op: 'remove', path });
    else ops.push({ op: 'test', path, value: a }, { op: 'replace', path, value: b });
  }
  return ops;
}
