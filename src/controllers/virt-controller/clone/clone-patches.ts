/**
 * The JSON patches a clone hands its restore (upstream's
 * pkg/virt-controller/watch/clone/vm-target.go generatePatches): new MAC addresses, a new
 * SMBIOS serial, no firmware UUID, the label and annotation filters as removals, then the
 * clone's own `spec.patches`.
 *
 * Upstream writes `replace` with an empty value for a MAC, serial or UUID it clears (its
 * JSON patch library adds a missing member on replace, and an empty value means unset
 * there). This project's JSON patch is strict (a replace needs the member) and an empty
 * MAC is refused by the converter, so a cleared field is removed instead and a new one
 * added: the target ends the same, its MAC derived from its own VMI, its serial defaulted
 * from its own name, its UUID from its own name.
 */
import type { VirtualMachine, VirtualMachineCloneSpec } from '../../../api/generated/types';
import type { JsonPatchOp } from '../../runtime/types';

/** The annotation a restore needs on its target: never filtered out (upstream's exception). */
const LAST_RESTORE_ANNOTATION = 'restore.kubevirt.io/lastRestoreUID';

/** RFC 6901 escaping of one pointer token. */
const token = (k: string) => k.replaceAll('~', '~0').replaceAll('/', '~1');

/**
 * A filter as a matcher. Upstream hands the filter to Go's regexp, unanchored; admission
 * allows `*` only at the end and `!` only at the start. Here every other character is
 * literal (a user's string is never compiled as a pattern: no backtracking blow-up in
 * virt-controller) and `*` matches anything, so `kubevirt.io/*` and `*` behave as upstream's
 * documented filters do.
 */
function matcher(filter: string): (key: string) => boolean {
  if (filter === '*') return () => true;
  const literal = filter.endsWith('*') ? filter.slice(0, -1) : filter;
  return (key) => key.includes(literal);
}

/**
 * The keys of `m` the filters drop: a key is kept when a filter matches it and no negation
 * (`!`-prefixed) filter does. No filters (undefined) keeps everything.
 */
export function filteredOutKeys(
  m: Record<string, string> | undefined,
  filters: string[] | undefined,
): string[] {
  if (!filters || !m) return [];
  const include: Array<(k: string) => boolean> = [];
  const exclude: Array<(k: string) => boolean> = [];
  for (const f of filters) {
    if (f.startsWith('!') && f !== '!') exclude.push(matcher(f.slice(1)));
    else include.push(matcher(f));
  }
  return Object.keys(m).filter((k) => !include.some((f) => f(k)) || exclude.some((f) => f(k)));
}

const removals = (m: Record<string, string> | undefined, filters: string[] | undefined, base: string) =>
  filteredOutKeys(m, filters).map((k): JsonPatchOp => ({ op: 'remove', path: `${base}/${token(k)}` }));

/** The patches for the target of cloning `source` (the VM as its snapshot holds it). */
export function generatePatches(source: VirtualMachine, spec: VirtualMachineCloneSpec): string[] {
  const ops: JsonPatchOp[] = [];
  const tmpl = source.spec.template;
  const domain = tmpl.spec?.domain;
  for (const [i, iface] of (domain?.devices?.interfaces ?? []).entries()) {
    const path = `/spec/template/spec/domain/devices/interfaces/${i}/macAddress`;
    const mac = spec.newMacAddresses?.[iface.name];
    if (mac) ops.push({ op: 'add', path, value: mac });
    else if (iface.macAddress !== undefined) ops.push({ op: 'remove', path });
  }
  const fw = domain?.firmware;
  if (fw) {
    const path = '/spec/template/spec/domain/firmware/serial';
    if (spec.newSMBiosSerial) ops.push({ op: 'add', path, value: spec.newSMBiosSerial });
    else if (fw.serial !== undefined) ops.push({ op: 'remove', path });
  } else if (spec.newSMBiosSerial) {
    // A source with no firmware block (upstream's VMs carry a persisted firmware UUID, so
    // theirs always have one): the serial asked for still reaches the target.
    ops.push({
      op: 'add',
      path: '/spec/template/spec/domain/firmware',
      value: { serial: spec.newSMBiosSerial },
    });
  }
  ops.push(...removals(source.metadata?.labels, spec.labelFilters, '/metadata/labels'));
  const annotations = { ...(source.metadata?.annotations ?? {}) };
  delete annotations[LAST_RESTORE_ANNOTATION];
  ops.push(...removals(annotations, spec.annotationFilters, '/metadata/annotations'));
  ops.push(
    ...removals(tmpl.metadata?.labels, spec.template?.labelFilters, '/spec/template/metadata/labels'),
    ...removals(
      tmpl.metadata?.annotations,
      spec.template?.annotationFilters,
      '/spec/template/metadata/annotations',
    ),
  );
  if (fw?.uuid !== undefined) ops.push({ op: 'remove', path: '/spec/template/spec/domain/firmware/uuid' });
  return [...ops.map((o) => JSON.stringify(o)), ...(spec.patches ?? [])];
}
