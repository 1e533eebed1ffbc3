/**
 * What the embedded store does with a CustomResourceDefinition it stores: checks its names
 * (and that no built-in kind is taken over) and sets the status conditions the API server's
 * CRD controllers set, NamesAccepted and Established.
 */
import { invalid } from '../errors';
import { typesFromCrd } from '../resources';
import type { ResourceType } from '../types';
import { crdNameCauses, now } from './store-rules';
import type { StoredObj } from './store-types';

/**
 * Validates a CRD object and marks it accepted in place; returns the kinds it serves (one
 * a version) for the store to register. 422 on missing or clashing names.
 */
export function acceptCrd(obj: StoredObj, isReserved: (t: ResourceType) => boolean): ResourceType[] {
  const types = typesFromCrd(obj);
  if (types.length === 0) {
    throw invalid('CustomResourceDefinition', obj.metadata.name, [
      {
        field: 'spec',
        message: 'Invalid value: group, names.kind, names.plural and versions are required',
      },
    ]);
  }
  const t = types[0];
  const causes = crdNameCauses(obj, t);
  // As the API server, a CRD cannot serve a kind the server already serves itself.
  if (isReserved(t)) {
    causes.push({
      reason: 'FieldValueForbidden',
      field: 'spec.names',
      message: `Forbidden: ${t.plural}.${t.group} (kind ${t.kind}) is served by a built-in API`,
    });
  }
  if (causes.length) throw invalid('CustomResourceDefinition', obj.metadata.name, causes);
  const status = (obj.status ?? {}) as { conditions?: unknown[] };
  obj.status = {
    ...status,
    conditions: [
      { type: 'NamesAccepted', status: 'True', reason: 'NoConflicts', lastTransitionTime: now() },
      { type: 'Established', status: 'True', reason: 'InitialNamesAccepted', lastTransitionTime: now() },
    ],
    acceptedNames: (obj.spec as { names?: unknown }).names,
    storedVersions: types.map((v) => v.version).slice(0, 1),
  };
  return types;
}

/** The kinds a CRD restored from disk may serve: none that a built-in kind reserves. */
export function restoredCrdTypes(obj: StoredObj, isReserved: (t: ResourceType) => boolean): ResourceType[] {
  // A CRD stored before built-in kinds were reserved must not take one over on restart.
  return typesFromCrd(obj).filter((t) => !isReserved(t));
}
