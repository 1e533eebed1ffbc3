/**
 * Validation of instance types and preferences (instancetype.kubevirt.io): the values an
 * instance type must provide, and the enumerations a preference may use.
 */
import { parseQuantity, quantityValue } from '../config/quantity';
import { type FieldError, FieldPath, fieldError } from '../errors';
import type {
  ObjectMeta,
  VirtualMachineInstancetypeSpec,
  VirtualMachinePreferenceSpec,
} from '../generated/types';
import { validateObjectMeta } from './names';

const topologies = [
  'sockets',
  'cores',
  'threads',
  'spread',
  'any',
  'preferSockets',
  'preferCores',
  'preferThreads',
  'preferSpread',
  'preferAny',
];
const spreadAxes = ['SocketsCores', 'CoresThreads', 'SocketsCoresThreads'];

/** Validates a VirtualMachineInstancetype or VirtualMachineClusterInstancetype. */
export function validateInstancetype(
  obj: { metadata?: ObjectMeta; spec?: VirtualMachineInstancetypeSpec },
  options: { cluster?: boolean } = {},
): FieldError[] {
  const field = FieldPath.of('spec');
  const errs = validateObjectMeta(obj.metadata, { namespaced: !options.cluster });
  const spec = obj.spec;
  if (!spec) return [...errs, fieldError(field, 'Required value', 'FieldValueRequired')];
  const guest = spec.cpu?.guest;
  if (guest === undefined)
    errs.push(fieldError(field.child('cpu', 'guest'), 'Required value', 'FieldValueRequired'));
  else if (!Number.isInteger(guest) || guest < 1) {
    errs.push(
      fieldError(
        field.child('cpu', 'guest'),
        `Invalid value: ${guest}: must be a whole number of at least 1`,
      ),
    );
  }
  const mem = spec.memory?.guest;
  if (mem === undefined)
    errs.push(fieldError(field.child('memory', 'guest'), 'Required value', 'FieldValueRequired'));
  else if (!parseQuantity(mem) || quantityValue(mem) <= 0) {
    errs.push(
      fieldError(field.child('memory', 'guest'), `Invalid value: "${mem}": must be a positive quantity`),
    );
  }
  const overcommit = spec.memory?.overcommitPercent;
  if (overcommit !== undefined) {
    const p = field.child('memory', 'overcommitPercent');
    if (overcommit < 0 || overcommit > 100) {
      errs.push(fieldError(p, `${p} '${overcommit}': must be in range between 0 and 100.`));
    }
    if (overcommit !== 0 && spec.memory?.hugepages) {
      errs.push(
        fieldError(p, `${p} and ${field.child('memory', 'hugepages')} should not be requested together.`),
      );
    }
  }
  return errs;
}

/** Validates a VirtualMachinePreference or VirtualMachineClusterPreference. */
export function validatePreference(
  obj: { metadata?: ObjectMeta; spec?: VirtualMachinePreferenceSpec },
  options: { cluster?: boolean } = {},
): FieldError[] {
  const field = FieldPath.of('spec');
  const errs = validateObjectMeta(obj.metadata, { namespaced: !options.cluster });
  const cpu = obj.spec?.cpu;
  if (cpu?.preferredCPUTopology !== undefined && !topologies.includes(cpu.preferredCPUTopology)) {
    errs.push(
      fieldError(
        field.child('cpu', 'preferredCPUTopology'),
        `Unsupported value: "${cpu.preferredCPUTopology}": supported values: "${topologies.slice(0, 5).join('", "')}"`,
        'FieldValueNotSupported',
      ),
    );
  }
  const spread = cpu?.spreadOptions;
  if (spread?.across !== undefined && !spreadAxes.includes(spread.across)) {
    errs.push(
      fieldError(
        field.child('cpu', 'spreadOptions', 'across'),
        `Unsupported value: "${spread.across}": supported values: "${spreadAxes.join('", "')}"`,
        'FieldValueNotSupported',
      ),
    );
  }
  const topology = cpu?.preferredCPUTopology;
  if (spread && (topology === 'spread' || topology === 'preferSpread') && spread.across === 'CoresThreads') {
    if ((spread.ratio ?? 2) !== 2) {
      errs.push(
        fieldError(
          field.child('cpu', 'spreadOptions', 'ratio'),
          'only a ratio of 2 (1 core 2 threads) is allowed when spreading vCPUs over cores and threads',
        ),
      );
    }
  }
  if (spread?.ratio !== undefined && (!Number.isInteger(spread.ratio) || spread.ratio < 1)) {
    errs.push(
      fieldError(
        field.child('cpu', 'spreadOptions', 'ratio'),
        `Invalid value: ${spread.ratio}: must be at least 1`,
      ),
    );
  }
  return errs;
}
