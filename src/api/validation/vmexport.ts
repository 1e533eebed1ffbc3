/**
 * Admission of export.kubevirt.io's VirtualMachineExport, as upstream's vmexport admitter
 * (its messages and field paths, `spec.source.APIGroup` spelled as upstream's): on create,
 * a source of kind PersistentVolumeClaim (no API group), VirtualMachine (`kubevirt.io`) or
 * VirtualMachineSnapshot (`snapshot.kubevirt.io`) with a name; on update, an unchanged
 * spec. VirtualMachineBackup and VirtualMachineTemplate sources, which upstream accepts
 * behind feature gates, are refused here: neither is built. The `ttlDuration` must parse.
 */

import { parseDuration } from '../duration';
import type { FieldError } from '../errors';

type ExportLike = {
  spec?: {
    source?: { apiGroup?: unknown; kind?: unknown; name?: unknown };
    ttlDuration?: unknown;
    tokenSecretRef?: unknown;
  };
};

const invalid = (path: string, message: string): FieldError => ({ path, message, type: 'FieldValueInvalid' });

const KINDS: Record<string, { label: string; group: string | undefined }> = {
  PersistentVolumeClaim: { label: 'PVC', group: undefined },
  VirtualMachine: { label: 'VM', group: 'kubevirt.io' },
  VirtualMachineSnapshot: { label: 'VMSnapshot', group: 'snapshot.kubevirt.io' },
};

/** The errors of `obj` for `operation` (`old`: the object before an update). */
export function validateVirtualMachineExport(obj: unknown, operation: string, old?: unknown): FieldError[] {
  const e = (obj ?? {}) as ExportLike;
  if (operation === 'UPDATE') {
    const prev = (old ?? {}) as ExportLike;
    return JSON.stringify(prev.spec ?? {}) === JSON.stringify(e.spec ?? {})
      ? []
      : [invalid('spec', 'spec in immutable after creation')];
  }
  const src = e.spec?.source ?? {};
  const kind = typeof src.kind === 'string' ? KINDS[src.kind] : undefined;
  if (!kind) {
    const known = src.kind === 'VirtualMachineBackup' || src.kind === 'VirtualMachineTemplate';
    return [
      invalid(
        'spec.source.kind',
        known ? `${String(src.kind)} sources are not supported by kubevirt-ts yet` : 'invalid kind',
      ),
    ];
  }
  const errs: FieldError[] = [];
  if (typeof src.name !== 'string' || src.name === '')
    errs.push(invalid('spec.source.name', `${kind.label} name must not be empty`));
  const group = typeof src.apiGroup === 'string' ? src.apiGroup : undefined;
  if (kind.group === undefined ? group !== undefined && group !== '' : group !== kind.group)
    errs.push(
      invalid(
        'spec.source.APIGroup',
        kind.group === undefined
          ? 'PVC API group must be missing or blank'
          : `${kind.label} API group must be ${kind.group}`,
      ),
    );
  const ttl = e.spec?.ttlDuration;
  if (ttl !== undefined) {
    let ms: number | undefined;
    try {
      ms = typeof ttl === 'string' ? parseDuration(ttl, 'spec.ttlDuration') : undefined;
    } catch {
      ms = undefined;
    }
    if (ms === undefined || ms <= 0)
      errs.push(
        invalid('spec.ttlDuration', `${JSON.stringify(ttl)} is not a positive duration (e.g. 2h, 30m)`),
      );
  }
  const ref = e.spec?.tokenSecretRef;
  if (ref !== undefined && (typeof ref !== 'string' || !/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(ref)))
    errs.push(invalid('spec.tokenSecretRef', `${JSON.stringify(ref)} is not a Secret name`));
  return errs;
}
