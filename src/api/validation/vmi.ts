/**
 * Validation of a VirtualMachineInstance as upstream's VMI create admitter: object
 * metadata, reserved labels, feature-gated annotations, the spec, volumes used by disks,
 * mandatory memory and Hyper-V dependencies. Run it on the defaulted object.
 */
import type { ClusterConfig } from '../config/cluster-config';
import { FeatureGate } from '../config/feature-gates';
import { validateHypervFeatureDependencies, validateHypervMode } from '../defaults/hyperv';
import { type FieldError, FieldPath, fieldError } from '../errors';
import type { ObjectMeta, VirtualMachineInstance } from '../generated/types';
import { Annotations, RestrictedVMILabels } from '../labels';
import {
  LIBVIRT_LOG_FILTERS_ANNOTATION,
  LOG_VERBOSITY_LABEL,
  libvirtLogFiltersProblem,
  logVerbosityProblem,
} from '../launcher-log-labels';
import { validateObjectMeta } from './names';
import { validateArchitectureSettings } from './vmi-arch';
import { validateMandatoryMemory } from './vmi-compute';
import { validateVirtualMachineInstanceSpec } from './vmi-spec';
import { validateVolumesHaveDisks } from './vmi-storage';

/** Options shared by the validators. */
export interface ValidationOptions {
  /** The request comes from a KubeVirt service account, which may set reserved labels. */
  kubevirtServiceAccount?: boolean;
}

/** Upstream's `ValidateVirtualMachineInstanceMetadata` for the metadata at `field`. */
export function validateVirtualMachineInstanceMetadata(
  field: FieldPath,
  meta: ObjectMeta | undefined,
  config: ClusterConfig,
  options: ValidationOptions = {},
): FieldError[] {
  const errs: FieldError[] = [];
  const labels = meta?.labels ?? {};
  const annotations = meta?.annotations ?? {};
  if (!options.kubevirtServiceAccount && Object.keys(labels).some((k) => RestrictedVMILabels.includes(k))) {
    errs.push(
      fieldError(
        field.child('labels'),
        'creation of the following reserved kubevirt.io/ labels on a VMI object is prohibited',
        'FieldValueNotSupported',
      ),
    );
  }
  if (annotations[Annotations.ignitionData] && !config.isFeatureGateEnabled(FeatureGate.Ignition)) {
    errs.push(
      fieldError(
        field.child('annotations'),
        `ExperimentalIgnitionSupport feature gate is not enabled in kubevirt-config, invalid entry ${field.child('annotations', Annotations.ignitionData)}`,
      ),
    );
  }
  if (annotations[Annotations.hookSidecars] && !config.isFeatureGateEnabled(FeatureGate.Sidecar)) {
    errs.push(
      fieldError(
        field.child('annotations'),
        `sidecar feature gate is not enabled in kubevirt-config, invalid entry ${field.child('annotations', Annotations.hookSidecars)}`,
      ),
    );
  }
  const threads = annotations[Annotations.multiThreadedQemuMigration];
  if (threads !== undefined) {
    const entry = field.child('annotations', Annotations.multiThreadedQemuMigration);
    if (!/^[+-]?\d+$/.test(threads)) {
      errs.push(
        fieldError(
          field.child('annotations'),
          `cannot parse ${threads} to int: strconv.Atoi: parsing "${threads}": invalid syntax, invalid entry ${entry}`,
        ),
      );
    } else if (Number.parseInt(threads, 10) <= 1) {
      errs.push(
        fieldError(
          field.child('annotations'),
          `thread count (${threads}) must be larger than 1. invalid entry ${entry}`,
        ),
      );
    }
  }
  const verbosity = labels[LOG_VERBOSITY_LABEL];
  const verbosityProblem = verbosity === undefined ? undefined : logVerbosityProblem(verbosity);
  if (verbosityProblem) {
    const at = field.child('labels').key(LOG_VERBOSITY_LABEL);
    errs.push(fieldError(at, `${at} ${verbosityProblem}`));
  }
  const filters = annotations[LIBVIRT_LOG_FILTERS_ANNOTATION];
  const filtersProblem = filters === undefined ? undefined : libvirtLogFiltersProblem(filters);
  if (filtersProblem) {
    // The launcher writes them into its daemon's configuration: only libvirt's grammar passes.
    errs.push(
      fieldError(
        field.child('annotations').key(LIBVIRT_LOG_FILTERS_ANNOTATION),
        `${field.child('annotations').key(LIBVIRT_LOG_FILTERS_ANNOTATION)} ${filtersProblem}`,
      ),
    );
  }
  return errs;
}

/** Validates a (defaulted) VirtualMachineInstance; returns every error with its field path. */
export function validateVirtualMachineInstance(
  vmi: VirtualMachineInstance,
  config: ClusterConfig,
  options: ValidationOptions = {},
): FieldError[] {
  const spec = FieldPath.of('spec');
  const errs = [
    ...validateObjectMeta(vmi.metadata),
    ...validateVirtualMachineInstanceMetadata(FieldPath.of('metadata'), vmi.metadata, config, options),
    ...validateVirtualMachineInstanceSpec(spec, vmi.spec, config),
  ];
  if (vmi.spec?.domain) {
    const s = vmi.spec.domain.devices
      ? vmi.spec
      : { ...vmi.spec, domain: { ...vmi.spec.domain, devices: {} } };
    errs.push(...validateVolumesHaveDisks(spec, s));
    errs.push(...validateMandatoryMemory(spec, s));
    errs.push(...validateHypervFeatureDependencies(spec, s));
    errs.push(...validateHypervMode(spec, s));
    if (s.architecture) errs.push(...validateArchitectureSettings(spec, s));
  }
  return errs;
}
