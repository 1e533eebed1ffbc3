/**
 * Validation of a VirtualMachine as upstream's VM admitter: the template is required, its
 * metadata and (defaulted) spec must be valid, data volume templates must be well formed
 * and used, and exactly one of `running`/`runStrategy` must be set to a known strategy.
 */
import type { ClusterConfig } from '../config/cluster-config';
import { FeatureGate } from '../config/feature-gates';
import { parseQuantity } from '../config/quantity';
import { liveUpdateMemoryProblem } from '../defaults/memory-hotplug';
import { DefaultingError, defaultVirtualMachineInstanceSpec } from '../defaults/vmi-defaults';
import { type FieldError, FieldPath, fieldError } from '../errors';
import type { DataVolumeTemplateSpec, VirtualMachine, VirtualMachineSpec } from '../generated/types';
import type { InstancetypeCatalog } from '../instancetype/catalog';
import { expandVirtualMachine } from '../instancetype/expand';
import { checkPreferenceRequirements } from '../instancetype/requirements';
import { awaitsInference, validateMatchers } from './instancetype-matcher';
import { validateObjectMeta } from './names';
import { type ValidationOptions, validateVirtualMachineInstanceMetadata } from './vmi';
import { validateArchitectureSettings } from './vmi-arch';
import { validateVirtualMachineInstanceSpec } from './vmi-spec';

/** Run strategies upstream accepts. */
export const RunStrategies = [
  'Halted',
  'Manual',
  'Always',
  'RerunOnFailure',
  'Once',
  'WaitAsReceiver',
] as const;

/** Options of {@link validateVirtualMachine}. */
export interface VirtualMachineValidationOptions extends ValidationOptions {
  /**
   * Resolve and apply the VM's instance type and preference before validating, as
   * upstream's admitter does; unresolvable references and conflicts become errors. Without
   * a catalog the template is validated as written.
   */
  instancetypes?: InstancetypeCatalog;
}

function validateDataVolumeTemplate(field: FieldPath, dv: DataVolumeTemplateSpec): FieldError[] {
  const name = dv.metadata?.name;
  if (!name) {
    return [
      fieldError(
        field.child('name'),
        `'name' field must not be empty for DataVolumeTemplate entry ${field.child('name')}.`,
        'FieldValueRequired',
      ),
    ];
  }
  const spec = dv.spec ?? {};
  if (!spec.pvc && !spec.storage)
    return [fieldError(field.child('PVC', 'Storage'), 'Missing Data volume PVC or Storage')];
  if (spec.pvc && spec.storage) {
    return [
      fieldError(
        field.child('PVC', 'Storage'),
        'Duplicate storage definition, both target storage and target pvc defined',
      ),
    ];
  }
  const target = spec.pvc ?? spec.storage;
  if ((target?.dataSourceRef || target?.dataSource) && (spec.source || spec.sourceRef)) {
    return [
      fieldError(field.child('source'), 'External population is incompatible with Source and SourceRef'),
    ];
  }
  if (!target?.dataSourceRef && !target?.dataSource && !spec.source && !spec.sourceRef) {
    return [
      fieldError(
        field.child('source', 'sourceRef'),
        'Data volume should have either Source, SourceRef, or be externally populated',
      ),
    ];
  }
  if (spec.source) {
    const n = Object.values(spec.source).filter((v) => v !== undefined && v !== null).length;
    if (n === 0) return [fieldError(field.child('source'), 'Missing dataVolume valid source')];
    if (n > 1) return [fieldError(field.child('source'), 'Multiple dataVolume sources')];
  }
  // A storage size must be positive (CDI refuses the DataVolume otherwise, long after the VM was accepted).
  const size = target?.resources?.requests?.storage;
  const parsed = size === undefined ? undefined : parseQuantity(size);
  if (parsed && parsed.num <= 0n) {
    return [
      fieldError(
        field.child(spec.pvc ? 'pvc' : 'storage', 'resources', 'requests', 'storage'),
        `storage size '${String(size)}' must be greater than 0`,
      ),
    ];
  }
  return [];
}

function validateRunStrategy(
  field: FieldPath,
  spec: VirtualMachineSpec,
  config: ClusterConfig,
): FieldError[] {
  const errs: FieldError[] = [];
  if (spec.running !== undefined && spec.runStrategy !== undefined) {
    errs.push(
      fieldError(
        field.child('running'),
        'Running and RunStrategy are mutually exclusive. Note that Running is deprecated, please use RunStrategy instead',
      ),
    );
  }
  if (spec.running === undefined && spec.runStrategy === undefined) {
    errs.push(fieldError(field.child('running'), 'RunStrategy must be specified'));
  }
  if (spec.runStrategy !== undefined) {
    if (!(RunStrategies as readonly string[]).includes(spec.runStrategy)) {
      errs.push(fieldError(field.child('runStrategy'), `Invalid RunStrategy (${spec.runStrategy})`));
    } else if (
      spec.runStrategy === 'WaitAsReceiver' &&
      !config.isFeatureGateEnabled(FeatureGate.DecentralizedLiveMigration)
    ) {
      errs.push(
        fieldError(
          field.child('runStrategy'),
          `${FeatureGate.DecentralizedLiveMigration} feature gate is not enabled in kubevirt-config`,
        ),
      );
    }
  }
  return errs;
}

/** Upstream's `ValidateVirtualMachineSpec` for the VM spec at `field` (also used by pools). */
export function validateVirtualMachineSpec(
  field: FieldPath,
  spec: VirtualMachineSpec | undefined,
  config: ClusterConfig,
  options: ValidationOptions = {},
): FieldError[] {
  if (!spec?.template) {
    return [fieldError(field.child('template'), 'missing virtual machine template.', 'FieldValueRequired')];
  }
  const errs = validateVirtualMachineInstanceMetadata(
    field.child('template', 'metadata'),
    spec.template.metadata,
    config,
    options,
  );
  const specPath = field.child('template', 'spec');
  if (!spec.template.spec) {
    errs.push(fieldError(specPath, 'Required value', 'FieldValueRequired'));
  } else {
    // Upstream validates the template after the spec-level defaults, on a copy.
    try {
      const defaulted = defaultVirtualMachineInstanceSpec(spec.template.spec, config);
      errs.push(...validateVirtualMachineInstanceSpec(specPath, defaulted, config));
      // Upstream checks the architecture's rules (video models, watchdogs, firmware) only on
      // the VMI, so a VM whose template breaks them was admitted and failed at start.
      if (defaulted.architecture) errs.push(...validateArchitectureSettings(specPath, defaulted));
    } catch (e) {
      if (!(e instanceof DefaultingError)) throw e;
      errs.push(...e.errors.map((fe) => ({ ...fe, path: fe.path.replace(/^spec\./, `${specPath}.`) })));
    }
  }
  (spec.dataVolumeTemplates ?? []).forEach((dv, idx) => {
    const p = field.child('dataVolumeTemplate').index(idx);
    const dvErrs = validateDataVolumeTemplate(p, dv);
    errs.push(...dvErrs);
    if (dvErrs.length > 0) return;
    const name = dv.metadata?.name;
    const used = (spec.template.spec?.volumes ?? []).some(
      (v) => v.persistentVolumeClaim?.claimName === name || v.dataVolume?.name === name,
    );
    if (!used) {
      errs.push(
        fieldError(
          p,
          `DataVolumeTemplate entry ${p} must be referenced in the VMI template's 'volumes' list`,
          'FieldValueRequired',
        ),
      );
    }
  });
  errs.push(...validateRunStrategy(field, spec, config));
  if (config.vmRolloutStrategy === 'LiveUpdate') {
    const memory = spec.template.spec?.domain?.memory;
    if (memory?.maxGuest !== undefined && spec.template.spec) {
      const t = spec.template.spec;
      const problem = liveUpdateMemoryProblem(
        { ...t, architecture: t.architecture || config.defaultArchitecture },
        memory.maxGuest,
      );
      if (problem)
        errs.push(fieldError(field.child('template', 'spec', 'domain', 'memory', 'guest'), problem));
    }
    const cpu = spec.template.spec?.domain?.cpu;
    if (cpu?.sockets && cpu.maxSockets && cpu.sockets > cpu.maxSockets) {
      errs.push(
        fieldError(
          field.child('template', 'spec', 'domain', 'cpu', 'sockets'),
          'Number of sockets in CPU topology is greater than the maximum sockets allowed',
        ),
      );
    }
  }
  return errs;
}

/** Validates a (defaulted) VirtualMachine; returns every error with its field path. */
export function validateVirtualMachine(
  vm: VirtualMachine,
  config: ClusterConfig,
  options: VirtualMachineValidationOptions = {},
): FieldError[] {
  const errs = validateObjectMeta(vm.metadata);
  const matchers = validateMatchers(vm);
  if (matchers.length > 0) return [...errs, ...matchers];
  let target = vm;
  // A matcher naming a volume is inferred by virt-api's mutating webhook (local mode: its
  // apply) from the volume's objects; until then there is nothing to expand the VM with.
  if (options.instancetypes && !awaitsInference(vm) && (vm.spec?.instancetype || vm.spec?.preference)) {
    const expanded = expandVirtualMachine(vm, options.instancetypes);
    if (expanded.errors.length > 0) return [...errs, ...expanded.errors];
    target = expanded.vm;
    if (expanded.preference && target.spec.template?.spec) {
      try {
        const defaulted = defaultVirtualMachineInstanceSpec(target.spec.template.spec, config);
        const unmet = checkPreferenceRequirements(expanded.instancetype, expanded.preference, defaulted);
        if (unmet.length > 0) return [...errs, ...unmet];
      } catch (e) {
        // Defaulting problems are reported with the template below.
        if (!(e instanceof DefaultingError)) throw e;
      }
    }
  }
  return [...errs, ...validateVirtualMachineSpec(FieldPath.of('spec'), target.spec, config, options)];
}
