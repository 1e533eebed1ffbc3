/**
 * Admission in one call: default an object of any kubevirt.io kind the way upstream's
 * mutating webhooks do, then validate it the way the validating webhooks do. Local mode
 * and `kubevirt-ts validate` call these pure functions directly; virt-api's webhooks call
 * the defaulting half alone (mutating) and the whole (validating).
 */
import type { ClusterConfig } from '../config/cluster-config';
import { validateKubeVirtConfiguration } from '../config/validate-configuration';
import { validateWorkloadUpdateStrategy } from '../config/workload-update-strategy';
import { defaultVirtualMachineInstanceMigration } from '../defaults/migration-defaults';
import { defaultVirtualMachine } from '../defaults/vm-defaults';
import { DefaultingError, defaultVirtualMachineInstance } from '../defaults/vmi-defaults';
import { type FieldError, fieldError } from '../errors';
import { apiSchemas } from '../generated/schemas';
import type {
  KubeVirt,
  VirtualMachine,
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
  VirtualMachineInstanceReplicaSet,
  VirtualMachinePool,
} from '../generated/types';
import type { InstancetypeCatalog } from '../instancetype/catalog';
import { checkFields, formatFieldPath } from '../manifest/field-check';
import { validateInstancetype, validatePreference } from './instancetype';
import { validateVirtualMachineInstanceMigration } from './migration';
import { validateObjectMeta } from './names';
import { validateVirtualMachinePool } from './pool';
import { validateVirtualMachineInstanceReplicaSet } from './replicaset';
import { validateVirtualMachine } from './vm';
import { validateVirtualMachineInstance } from './vmi';

/** An API object as read from a manifest. */
export interface ApiObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; [k: string]: unknown };
  [k: string]: unknown;
}

/** Options of {@link admit}. */
export interface AdmissionOptions {
  /** Instance types and preferences VMs may reference; when given, VMs are expanded before validation. */
  instancetypes?: InstancetypeCatalog;
  /** The request comes from a KubeVirt service account (may set reserved labels). */
  kubevirtServiceAccount?: boolean;
}

/** Outcome of {@link admit}: the defaulted object and every validation error. */
export interface AdmissionResult<T = ApiObject> {
  object: T;
  errors: FieldError[];
}

/** Kinds with defaulting and validation rules beyond object metadata. */
export const AdmittedKinds = [
  'VirtualMachineInstance',
  'VirtualMachine',
  'VirtualMachineInstanceReplicaSet',
  'VirtualMachinePool',
  'VirtualMachineInstanceMigration',
  'VirtualMachineInstancetype',
  'VirtualMachineClusterInstancetype',
  'VirtualMachinePreference',
  'VirtualMachineClusterPreference',
] as const;

/**
 * Defaults then validates `object` by its kind. Kinds without specific rules get the
 * API server's metadata checks only.
 */
export function admit(
  object: ApiObject,
  config: ClusterConfig,
  options: AdmissionOptions = {},
): AdmissionResult {
  const defaulted = admitDefaults(object, config, options);
  if (defaulted.errors.length > 0) return defaulted;
  try {
    return { object: defaulted.object, errors: validateDefaulted(defaulted.object, config, options) };
  } catch (e) {
    if (e instanceof DefaultingError) return { object: defaulted.object, errors: e.errors };
    throw e;
  }
}

/**
 * The defaulting half of {@link admit}, what upstream's mutating webhooks do: the object
 * shape-checked and defaulted, not validated. `errors` are only the shape and defaulting
 * errors that stopped it (the object is then returned as given).
 */
export function admitDefaults(
  object: ApiObject,
  config: ClusterConfig,
  options: AdmissionOptions = {},
): AdmissionResult {
  // Like the API server's schema check before the webhooks: values of the wrong JSON type
  // or missing required fields stop admission here, so the rules below can trust shapes.
  const shape = shapeErrors(object);
  if (shape.length > 0) return { object, errors: shape };
  // JSON nulls mean "unset" to the Go structs upstream decodes into; drop them here.
  const o = withoutNulls(object) as ApiObject;
  try {
    switch (o.kind) {
      case 'VirtualMachineInstance':
        return {
          object: defaultVirtualMachineInstance(
            o as unknown as VirtualMachineInstance,
            config,
          ) as unknown as ApiObject,
          errors: [],
        };
      case 'VirtualMachine':
        return {
          object: defaultVirtualMachine(o as unknown as VirtualMachine, config, {
            instancetypes: options.instancetypes,
          }) as unknown as ApiObject,
          errors: [],
        };
      case 'VirtualMachineInstanceMigration':
        return {
          object: defaultVirtualMachineInstanceMigration(
            o as unknown as VirtualMachineInstanceMigration,
          ) as unknown as ApiObject,
          errors: [],
        };
      default:
        return { object: o, errors: [] };
    }
  } catch (e) {
    if (e instanceof DefaultingError) return { object: o, errors: e.errors };
    throw e;
  }
}

/** The validating half of {@link admit}, on an object {@link admitDefaults} defaulted. */
function validateDefaulted(
  object: ApiObject,
  config: ClusterConfig,
  options: AdmissionOptions,
): FieldError[] {
  const opts = { kubevirtServiceAccount: options.kubevirtServiceAccount };
  switch (object.kind) {
    case 'VirtualMachineInstance':
      return validateVirtualMachineInstance(object as unknown as VirtualMachineInstance, config, opts);
    case 'VirtualMachine':
      return validateVirtualMachine(object as unknown as VirtualMachine, config, {
        ...opts,
        instancetypes: options.instancetypes,
      });
    case 'VirtualMachineInstanceReplicaSet':
      return validateVirtualMachineInstanceReplicaSet(
        object as unknown as VirtualMachineInstanceReplicaSet,
        config,
      );
    case 'VirtualMachinePool':
      return validateVirtualMachinePool(object as unknown as VirtualMachinePool, config, opts);
    case 'VirtualMachineInstanceMigration':
      return validateVirtualMachineInstanceMigration(
        object as unknown as VirtualMachineInstanceMigration,
        config,
      );
    case 'VirtualMachineInstancetype':
    case 'VirtualMachineClusterInstancetype':
      return validateInstancetype(object, { cluster: object.kind.includes('Cluster') });
    case 'VirtualMachinePreference':
    case 'VirtualMachineClusterPreference':
      return validatePreference(object, { cluster: object.kind.includes('Cluster') });
    case 'KubeVirt':
      return [
        ...validateObjectMeta(object.metadata),
        ...validateKubeVirtConfiguration((object as unknown as KubeVirt).spec?.configuration),
        ...validateWorkloadUpdateStrategy((object as unknown as KubeVirt).spec?.workloadUpdateStrategy),
      ];
    default:
      return validateObjectMeta(object.metadata);
  }
}

/** Wrong JSON types, bad enum values and missing required fields, from the generated API schemas. */
function shapeErrors(object: ApiObject): FieldError[] {
  if (typeof object !== 'object' || object === null || Array.isArray(object)) {
    return [fieldError('', 'Invalid value: an object is required')];
  }
  const kind = object.kind;
  if (!kind || !apiSchemas[kind]) return [];
  return checkFields(object, kind)
    .filter((p) => p.code !== 'unknown-field')
    .map((p) =>
      fieldError(
        formatFieldPath(p.path, p.mapKeys),
        // The API server's wording for a missing required field.
        p.code === 'missing-field' ? 'Required value' : p.detail,
        p.code === 'missing-field'
          ? 'FieldValueRequired'
          : p.code === 'bad-enum'
            ? 'FieldValueNotSupported'
            : 'FieldValueInvalid',
      ),
    );
}

/** A copy without null properties; null list items become empty objects, as Go decodes them. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value))
    return Array.from(value, (v) => (v === null || v === undefined ? {} : withoutNulls(v)));
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) if (v !== null) out[k] = withoutNulls(v);
  return out;
}
