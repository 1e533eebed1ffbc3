/**
 * Finding the instance type and preference a VM references. A catalog is built from the
 * objects at hand (manifests, an informer cache) and resolves matchers the way upstream
 * does: namespaced kinds in the VM's namespace, cluster kinds by name, the cluster kind
 * when `kind` is empty, kind names compared case-insensitively.
 */
import type {
  InstancetypeMatcher,
  PreferenceMatcher,
  VirtualMachineInstancetypeSpec,
  VirtualMachinePreferenceSpec,
} from '../generated/types';

/** Kinds of the instancetype.kubevirt.io group. */
export const InstancetypeKinds = {
  instancetype: 'VirtualMachineInstancetype',
  clusterInstancetype: 'VirtualMachineClusterInstancetype',
  preference: 'VirtualMachinePreference',
  clusterPreference: 'VirtualMachineClusterPreference',
} as const;

/** Resolves instance types and preferences; returns undefined when the object does not exist. */
export interface InstancetypeCatalog {
  findInstancetype(
    matcher: InstancetypeMatcher,
    namespace: string,
  ): VirtualMachineInstancetypeSpec | undefined;
  findPreference(matcher: PreferenceMatcher, namespace: string): VirtualMachinePreferenceSpec | undefined;
}

/** A stored instancetype.kubevirt.io object: kind, identity (uid, generation) and spec. */
export interface CatalogObject {
  kind?: string;
  metadata?: { name?: string; namespace?: string; uid?: string; generation?: number };
  spec?: unknown;
}

/** A catalog that also hands out the whole objects (to store them as revisions). */
export interface InstancetypeObjectCatalog extends InstancetypeCatalog {
  instancetypeObject(matcher: InstancetypeMatcher, namespace: string): CatalogObject | undefined;
  preferenceObject(matcher: PreferenceMatcher, namespace: string): CatalogObject | undefined;
}

const defaultNamespace = 'default';

function normalizeKind(kind: string | undefined, cluster: string, namespaced: string): string | undefined {
  const k = (kind ?? '').toLowerCase();
  if (k === '' || k === cluster.toLowerCase() || k === `${cluster.toLowerCase()}s`) return cluster;
  if (k === namespaced.toLowerCase() || k === `${namespaced.toLowerCase()}s`) return namespaced;
  return undefined;
}

/** The kind a matcher names, defaulted and canonicalised; undefined for an unknown kind. */
export function instancetypeMatcherKind(matcher: InstancetypeMatcher): string | undefined {
  return normalizeKind(matcher.kind, InstancetypeKinds.clusterInstancetype, InstancetypeKinds.instancetype);
}

/** The kind a preference matcher names, defaulted and canonicalised; undefined for an unknown kind. */
export function preferenceMatcherKind(matcher: PreferenceMatcher): string | undefined {
  return normalizeKind(matcher.kind, InstancetypeKinds.clusterPreference, InstancetypeKinds.preference);
}

/** Builds an in-memory catalog from instancetype.kubevirt.io objects; other kinds are ignored. */
export function createInstancetypeCatalog(objects: readonly unknown[]): InstancetypeObjectCatalog {
  const byKey = new Map<string, CatalogObject>();
  const key = (kind: string, namespace: string, name: string) => `${kind}/${namespace}/${name}`;
  for (const o of objects) {
    if (typeof o !== 'object' || o === null) continue;
    const obj = o as CatalogObject;
    const kind = obj.kind ?? '';
    if (!(Object.values(InstancetypeKinds) as string[]).includes(kind)) continue;
    const cluster = kind.includes('Cluster');
    const ns = cluster ? '' : (obj.metadata?.namespace ?? defaultNamespace);
    byKey.set(key(kind, ns, obj.metadata?.name ?? ''), obj);
  }
  const find = (kind: string | undefined, name: string | undefined, namespace: string) => {
    if (!kind || !name) return undefined;
    const ns = kind.includes('Cluster') ? '' : namespace || defaultNamespace;
    return byKey.get(key(kind, ns, name));
  };
  const spec = (o: CatalogObject | undefined) => (o ? (o.spec ?? {}) : undefined);
  return {
    findInstancetype: (m, ns) =>
      spec(find(instancetypeMatcherKind(m), m.name, ns)) as VirtualMachineInstancetypeSpec | undefined,
    findPreference: (m, ns) =>
      spec(find(preferenceMatcherKind(m), m.name, ns)) as VirtualMachinePreferenceSpec | undefined,
    instancetypeObject: (m, ns) => find(instancetypeMatcherKind(m), m.name, ns),
    preferenceObject: (m, ns) => find(preferenceMatcherKind(m), m.name, ns),
  };
}
