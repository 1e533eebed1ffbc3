/**
 * Admission of snapshot.kubevirt.io objects and of VM updates under a snapshot or restore,
 * as upstream's pkg/storage/admitters (vmsnapshot.go, vmrestore.go, vm-storage-status.go):
 * the source or target must be a kubevirt.io VirtualMachine, specs are immutable, the
 * restore's policies and patches are checked, and a VM being snapshotted or restored may
 * not change its running state (nor, under a snapshot, its volumes).
 */
import type { ClusterConfig } from '../config/cluster-config';
import { FeatureGate } from '../config/feature-gates';
import type { FieldError } from '../errors';

type Obj = Record<string, unknown> & { spec?: Record<string, unknown>; status?: Record<string, unknown> };
const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** The API group of KubeVirt's VirtualMachine. */
const CORE_GROUP = 'kubevirt.io';

function refGroupKind(ref: unknown, path: string): FieldError[] {
  const r = (ref ?? {}) as { apiGroup?: unknown; kind?: unknown };
  if (r.apiGroup === undefined || r.apiGroup === null)
    return [{ path: `${path}.apiGroup`, message: 'missing apiGroup', type: 'FieldValueRequired' }];
  if (r.apiGroup !== CORE_GROUP)
    return [{ path: `${path}.apiGroup`, message: 'invalid apiGroup', type: 'FieldValueInvalid' }];
  if (r.kind !== 'VirtualMachine')
    return [{ path: `${path}.kind`, message: 'invalid kind', type: 'FieldValueInvalid' }];
  return [];
}

function immutableSpec(obj: Obj, old: Obj): FieldError[] {
  return same(obj.spec, old.spec)
    ? []
    : [{ path: 'spec', message: 'spec in immutable after creation', type: 'FieldValueInvalid' }];
}

/** A VirtualMachineSnapshot on create (old undefined) or update. */
export function validateVirtualMachineSnapshot(
  obj: Obj,
  old: Obj | undefined,
  config: ClusterConfig,
): FieldError[] {
  if (old) return immutableSpec(obj, old);
  if (!config.isFeatureGateEnabled(FeatureGate.Snapshot))
    return [{ path: 'spec', message: 'snapshot feature gate not enabled', type: 'FieldValueForbidden' }];
  const errs = refGroupKind(obj.spec?.source, 'spec.source');
  const d = obj.spec?.deletionPolicy;
  if (d !== undefined && d !== 'Delete' && d !== 'Retain')
    errs.push({
      path: 'spec.deletionPolicy',
      message: `deletion policy ${JSON.stringify(d)} doesn't exist (Delete, Retain)`,
      type: 'FieldValueNotSupported',
    });
  return errs;
}

const RESTORE_POLICIES = ['RandomizeNames', 'InPlace', 'PrefixTargetName'];
const OWNERSHIP_POLICIES = ['Vm', 'None'];
const READINESS_POLICIES = ['StopTarget', 'WaitGracePeriod', 'FailImmediate', 'WaitEventually'];

/** A patch's path is one a restore may patch: under /spec/, or a label or annotation. */
const patchablePath = (path: string) =>
  path.startsWith('/metadata/labels/') ||
  path.startsWith('/metadata/annotations/') ||
  path.startsWith('/spec/');

/**
 * upstream validatePatches: `"key": value` pairs; paths only under /spec/ (or labels,
 * annotations). Upstream splits the text on `,` and `:`, which also refuses a well-formed
 * patch whose value holds one (a MAC address: upstream's own clones with
 * `newMacAddresses` would be refused); here a patch the split cannot read that parses as a
 * JSON object is judged by its `path` instead. Otherwise upstream's split and messages.
 */
function patchErrors(patches: unknown): FieldError[] {
  const out: FieldError[] = [];
  for (const p of Array.isArray(patches) ? patches : []) {
    const split = splitPatchErrors(String(p));
    const op = split.some((e) => e.message.startsWith('patch format')) ? parsedObject(p) : undefined;
    if (!op) out.push(...split);
    else if (typeof op.path === 'string' && !patchablePath(op.path))
      out.push({
        path: 'spec.patches',
        message: `patching is valid only for elements under /spec/ only: "path": ${JSON.stringify(op.path)}`,
        type: 'FieldValueInvalid',
      });
  }
  return out;
}

/** upstream's reading of one patch: its text split into `"key": value` pairs. */
function splitPatchErrors(p: string): FieldError[] {
  const out: FieldError[] = [];
  for (const kv of p.replace(/^[{}]+|[{}]+$/g, '').split(',')) {
    const parts = kv.split(':');
    if (parts.length !== 2) {
      out.push({
        path: 'spec.patches',
        message: `patch format is not valid - one ":" expected in a single key-value json patch: ${kv}`,
        type: 'FieldValueInvalid',
      });
      continue;
    }
    const key = parts[0]!.trim();
    const value = parts[1]!.trim();
    if (key === '"path"' && !patchablePath(value.replace(/^"/, '')))
      out.push({
        path: 'spec.patches',
        message: `patching is valid only for elements under /spec/ only: ${kv}`,
        type: 'FieldValueInvalid',
      });
  }
  return out;
}

function parsedObject(p: unknown): Record<string, unknown> | undefined {
  if (typeof p !== 'string') return undefined;
  try {
    const v: unknown = JSON.parse(p);
    return v !== null && typeof v === 'object' && !Array.isArray(v)
      ? (v as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** What restore admission needs from the cluster. */
export interface RestoreAdmissionContext {
  /** The namespace's restores (to refuse a second one in progress for the same target). */
  restores: Obj[];
}

/** A VirtualMachineRestore on create (old undefined) or update. */
export function validateVirtualMachineRestore(
  obj: Obj,
  old: Obj | undefined,
  config: ClusterConfig,
  ctx: RestoreAdmissionContext = { restores: [] },
): FieldError[] {
  if (old) return immutableSpec(obj, old);
  if (!config.isFeatureGateEnabled(FeatureGate.Snapshot))
    return [
      { path: 'spec', message: 'Snapshot/Restore feature gate not enabled', type: 'FieldValueForbidden' },
    ];
  const spec = obj.spec ?? {};
  const errs = refGroupKind(spec.target, 'spec.target');
  if (errs.length === 0) {
    errs.push(...patchErrors(spec.patches));
    const overrides = spec.volumeRestoreOverrides;
    if (Array.isArray(overrides)) {
      overrides.forEach((o: Record<string, unknown>, i) => {
        if (!o?.volumeName)
          errs.push({
            path: `spec.volumeRestoreOverrides[${i}].volumeName`,
            message: 'must provide a volume name',
            type: 'FieldValueRequired',
          });
        if (!o?.restoreName && o?.annotations === undefined && o?.labels === undefined)
          errs.push({
            path: `spec.volumeRestoreOverrides[${i}]`,
            message: 'must provide at least one overriden field',
            type: 'FieldValueRequired',
          });
      });
    }
    const check = (field: string, allowed: string[], what: string) => {
      const v = spec[field];
      if (v !== undefined && !allowed.includes(String(v)))
        errs.push({
          path: `spec.${field}`,
          message: `${what} "${v}" doesn't exist`,
          type: 'FieldValueInvalid',
        });
    };
    check('volumeRestorePolicy', RESTORE_POLICIES, 'volume restore policy');
    check('volumeOwnershipPolicy', OWNERSHIP_POLICIES, 'volume ownership policy');
    check('targetReadinessPolicy', READINESS_POLICIES, 'target readiness policy');
  }
  for (const r of ctx.restores) {
    const st = r.status as { complete?: boolean } | undefined;
    if (same(r.spec?.target, spec.target) && !st?.complete) {
      const name = (r.metadata as { name?: string } | undefined)?.name;
      errs.push({
        path: 'spec.target',
        message: `VirtualMachineRestore ${JSON.stringify(name)} in progress`,
        type: 'FieldValueInvalid',
      });
    }
  }
  return errs;
}

/** The running state a VM asks for: `running` and `runStrategy` as written. */
const runningSpec = (vm: Obj) => ({ running: vm.spec?.running, runStrategy: vm.spec?.runStrategy });

/**
 * A VM update while `status.snapshotInProgress` or `status.restoreInProgress` is set: no
 * change of running state, and under a snapshot no change of volumes.
 */
export function validateVmUnderSnapshotOrRestore(vm: Obj, old: Obj): FieldError[] {
  const restore = vm.status?.restoreInProgress ?? old.status?.restoreInProgress;
  const snapshot = vm.status?.snapshotInProgress ?? old.status?.snapshotInProgress;
  const errs: FieldError[] = [];
  if (restore && !same(runningSpec(vm), runningSpec(old)))
    errs.push({
      path: 'spec',
      message: `Cannot update VM runStrategy until restore ${JSON.stringify(restore)} completes`,
      type: 'FieldValueNotSupported',
    });
  if (snapshot) {
    const vols = (o: Obj) =>
      (o.spec?.template as { spec?: { volumes?: unknown } } | undefined)?.spec?.volumes;
    if (!same(vols(vm), vols(old)))
      errs.push({
        path: 'spec',
        message: `Cannot update vm disks or volumes until snapshot ${JSON.stringify(snapshot)} completes`,
        type: 'FieldValueNotSupported',
      });
    else if (!same(runningSpec(vm), runningSpec(old)))
      errs.push({
        path: 'spec',
        message: `Cannot update vm running state until snapshot ${JSON.stringify(snapshot)} completes`,
        type: 'FieldValueNotSupported',
      });
  }
  return errs;
}
