/**
 * Memory rules of a VMI spec (upstream's VMI create admitter): memory requests and limits,
 * guest memory against the limit, hugepage sizes, and the mandatory memory request.
 */
import type { ClusterConfig } from '../config/cluster-config';
import { compareQuantities, parseQuantity, quantityValue } from '../config/quantity';
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { Quantity, VirtualMachineInstanceSpec } from '../generated/types';

/** Prints a quantity the way upstream's messages do (its text as given; `0` when unset). */
export function quantityText(v: Quantity | undefined): string {
  return v === undefined ? '0' : String(v);
}

/** Memory requests, limits, guest memory and hugepages. */
export function validateMemory(
  field: FieldPath,
  spec: VirtualMachineInstanceSpec,
  config: ClusterConfig,
): FieldError[] {
  const errs: FieldError[] = [];
  const res = spec.domain.resources ?? {};
  const reqMem = res.requests?.memory;
  const limMem = res.limits?.memory;
  const reqPath = field.child('domain', 'resources', 'requests', 'memory');
  const limPath = field.child('domain', 'resources', 'limits', 'memory');
  for (const [value, path] of [
    [reqMem, reqPath],
    [limMem, limPath],
    [res.requests?.cpu, field.child('domain', 'resources', 'requests', 'cpu')],
    [res.limits?.cpu, field.child('domain', 'resources', 'limits', 'cpu')],
    [spec.domain.memory?.guest, field.child('domain', 'memory', 'guest')],
  ] as const) {
    if (value !== undefined && !parseQuantity(value)) {
      errs.push(
        fieldError(
          path,
          `${path} '${value}': quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
        ),
      );
    }
  }
  if (quantityValue(reqMem) < 0) {
    errs.push(
      fieldError(reqPath, `${reqPath} '${quantityText(reqMem)}': must be greater than or equal to 0.`),
    );
  } else if (quantityValue(reqMem) > 0 && compareQuantities(reqMem as Quantity, '1M') < 0) {
    errs.push(
      fieldError(reqPath, `${reqPath} '${quantityText(reqMem)}': must be greater than or equal to 1M.`),
    );
  }
  if (quantityValue(limMem) < 0) {
    errs.push(
      fieldError(limPath, `${limPath} '${quantityText(limMem)}': must be greater than or equal to 0.`),
    );
  }
  if (quantityValue(limMem) > 0 && quantityValue(reqMem) > quantityValue(limMem)) {
    errs.push(
      fieldError(
        reqPath,
        `${reqPath} '${quantityText(reqMem)}' is greater than ${limPath} '${quantityText(limMem)}'`,
      ),
    );
  }
  const hugepages = spec.domain.memory?.hugepages;
  if (hugepages) {
    const sizePath = field.child('domain', 'hugepages', 'size');
    const size = parseQuantity(hugepages.pageSize);
    if (!size) {
      errs.push(
        fieldError(
          sizePath,
          `${sizePath} '${hugepages.pageSize ?? ''}': quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
        ),
      );
    } else {
      const sizeBytes = quantityValue(hugepages.pageSize);
      const vmMemory = quantityValue(reqMem) || quantityValue(spec.domain.memory?.guest);
      if (vmMemory !== 0 && vmMemory < sizeBytes) {
        errs.push(
          fieldError(
            reqPath,
            `${reqPath} '${quantityText(reqMem)}' must be equal to or larger than page size ${sizePath} '${hugepages.pageSize}'`,
          ),
        );
      } else if (sizeBytes > 0 && vmMemory % sizeBytes !== 0) {
        errs.push(
          fieldError(
            reqPath,
            `${reqPath} '${quantityText(reqMem)}' is not a multiple of the page size ${sizePath} '${hugepages.pageSize}'`,
          ),
        );
      }
    }
  }
  const guest = spec.domain.memory?.guest;
  if (guest !== undefined) {
    const guestPath = field.child('domain', 'memory', 'guest');
    const limits = quantityValue(limMem);
    // Under LiveUpdate the guest may grow up to maxGuest, so the limit is checked elsewhere.
    if (config.vmRolloutStrategy !== 'LiveUpdate' && limits !== 0 && limits < quantityValue(guest)) {
      errs.push(
        fieldError(
          guestPath,
          `${guestPath} '${quantityText(guest)}' must be equal to or less than the memory limit ${limPath} '${quantityText(limMem)}'`,
        ),
      );
    }
    if (quantityValue(guest) < 0) {
      errs.push(
        fieldError(guestPath, `${guestPath} '${quantityText(guest)}': must be greater than or equal to 0.`),
      );
    }
  }
  return errs;
}

/** Upstream's mandatory-fields check, run on VMIs (not templates) after defaulting. */
export function validateMandatoryMemory(field: FieldPath, spec: VirtualMachineInstanceSpec): FieldError[] {
  const mem = spec.domain.memory;
  if (
    quantityValue(spec.domain.resources?.requests?.memory) === 0 &&
    (!mem || (mem.guest === undefined && !mem.hugepages))
  ) {
    return [
      fieldError(
        field.child('domain', 'memory', 'guest'),
        `no memory requested, at least one of '${field.child('domain', 'memory', 'guest')}', '${field.child('domain', 'memory', 'hugepages', 'size')}' or '${field.child('domain', 'resources', 'requests', 'memory')}' must be set`,
        'FieldValueRequired',
      ),
    ];
  }
  return [];
}
