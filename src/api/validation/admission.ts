/**
 * Admission in one call: default an object of any kubevirt.io kind the way upstream's
 * mutating webhooks do, then validate it the way the validating webhooks do. Local mode
 * and `kubevirt-ts validate` call these pure functions directly; they will back the
 * admission webhooks of a cluster deployment, which do not exist yet.
 */
import type { ClusterConfig } from '../config/cluster-config';
import { validateKubeVirtConfiguration } from '../config/validate-configuration';
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
  const opts = { kubevirtServiceAccount: options.kubevirtServiceAccount };
  // Like the API server's schema check before the webhooks: values of the wrong JSON type
  // or missing required fields stop admission here, so the rules below can trust shapes.
  const shape = shapeErrors(object);
  if (shape.length > 0) return { object, errors: shape };
  // JSON nulls mean "unset" to the Go structs upstream decodes into; drop them here.
  object = withoutNulls(object) as ApiObject;
  try {
    switch (object.kind) {
      case 'VirtualMachineInstance': {
        const o = defaultVirtualMachineInstance(object as unknown as VirtualMachineInstance, config);
        return { object: o as unknown as ApiObject, errors: validateVirtualMachineInstance(o, config, opts) };
      }
      case 'VirtualMachine': {
        const o = defaultVirtualMachine(object as unknown as VirtualMachine, config, {
          instancetypes: options.instancetypes,
        });
        const errors = validateVirtualMachine(o, config, { ...opts, instancetypes: options.instancetypes });
        return { object: o as unknown as ApiObject, errors };
      }
      case 'VirtualMachineInstanceReplicaSet': {
        const o = object as unknown as VirtualMachineInstanceReplicaSet;
        return { object, errors: validateVirtualMachineInstanceReplicaSet(o, config) };
      }
      case 'VirtualMachinePool': {
        const o = object as unknown as VirtualMachinePool;
        return { object, errors: validateVirtualMachinePool(o, config, opts) };
      }
      case 'VirtualMachineInstanceMigration': {
        const o = defaultVirtualMachineInstanceMigration(
          object as unknown as VirtualMachineInstanceMigration,
        );
        return {
          object: o as unknown as ApiObject,
          errors: validateVirtualMachineInstanceMigration(o, config),
        };
      }
      case 'VirtualMachineInstancetype':
      case 'VirtualMachineClusterInstancetype':
        return { object, errors: validateInstancetype(object, { cluster: object.kind.includes('Cluster') }) };
      case 'VirtualMachinePreference':
      case 'VirtualMachineClusterPreference':
        return { object, errors: validatePreference(object, { cluster: object.kind.includes('Cluster') }) };
      case 'KubeVirt': {
        const kv = object as unknown as KubeVirt;
        return {
          object,
          errors: [
            ...validateObjectMeta(object.metadata),
            ...validateKubeVirtConfiguration(kv.spec?.configuration),
          ],
        };
      }
      default:
        return { object, errors: validateObjectMeta(object.metadata) };
    }
  } catch (e) {
    if (e instanceof DefaultingError) return { object, errors: e.errors };
    throw e;
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
