/**
 * Values libvirt's domain schema or QEMU refuse, checked at admission with their field
 * paths (they were admitted, and failed only when the VMI started): timer tick policies
 * (upstream's RTC/PIT/HPET tick policy constants) and rtc track, the Hyper-V spinlocks
 * retries (libvirt: at least 4095; upstream: uint32) and the supplemental iothread count
 * (upstream: uint32, at least 1).
 */
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { VirtualMachineInstanceSpec } from '../generated/types';

const UINT32_MAX = 2 ** 32 - 1;

/** Tick policies per timer, as upstream's API names them (QEMU's rtc has no merge/discard). */
const TICK_POLICIES = {
  rtc: ['delay', 'catchup'],
  pit: ['delay', 'catchup', 'discard'],
  hpet: ['delay', 'catchup', 'merge', 'discard'],
} as const;

function oneOf(path: FieldPath, value: unknown, allowed: readonly string[]): FieldError[] {
  if (value === undefined || (typeof value === 'string' && allowed.includes(value))) return [];
  return [
    fieldError(
      path,
      `'${String(value).slice(0, 64)}' is not one of ${allowed.join(', ')}`,
      'FieldValueNotSupported',
    ),
  ];
}

function inRange(path: FieldPath, value: unknown, min: number, max: number): FieldError[] {
  if (value === undefined) return [];
  if (typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max) return [];
  return [fieldError(path, `must be an integer from ${min} to ${max}, got ${String(value).slice(0, 64)}`)];
}

/** Errors for timer, spinlocks and iothread values libvirt or QEMU would refuse. */
export function validateHypervisorValues(field: FieldPath, spec: VirtualMachineInstanceSpec): FieldError[] {
  const errs: FieldError[] = [];
  const timer = spec.domain.clock?.timer;
  const tp = field.child('domain', 'clock', 'timer');
  for (const name of ['rtc', 'pit', 'hpet'] as const) {
    const t = timer?.[name];
    if (t) errs.push(...oneOf(tp.child(name, 'tickPolicy'), t.tickPolicy, TICK_POLICIES[name]));
  }
  if (timer?.rtc) errs.push(...oneOf(tp.child('rtc', 'track'), timer.rtc.track, ['guest', 'wall']));
  const spin = spec.domain.features?.hyperv?.spinlocks;
  if (spin) {
    const p = field.child('domain', 'features', 'hyperv', 'spinlocks', 'spinlocks');
    // libvirt's minimum holds when the enlightenment is on (off, the retries are not passed).
    errs.push(...inRange(p, spin.spinlocks, spin.enabled === false ? 0 : 4095, UINT32_MAX));
  }
  const pool = spec.domain.ioThreads?.supplementalPoolThreadCount;
  errs.push(
    ...inRange(field.child('domain', 'ioThreads', 'supplementalPoolThreadCount'), pool, 1, UINT32_MAX),
  );
  return errs;
}
