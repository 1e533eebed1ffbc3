/**
 * The instance type and preference a VirtualMachine references, read from the API server
 * for its admission (upstream's VM admitter expands the VM the same way). Only the two
 * objects named are read; a missing one is left out of the catalog and the VM's
 * validation reports it.
 */

import type { VirtualMachine } from '../../api/generated/types';
import type { InstancetypeCatalog } from '../../api/instancetype/catalog';
import { createInstancetypeCatalog } from '../../api/instancetype/catalog';
import { revisionCatalog } from '../common/instancetype-revision-catalog';
import { InstancetypeResources } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';

/** instancetype.kubevirt.io kinds by their names in a VM's matcher (the embedded store's too). */
export { InstancetypeResources };

interface Matcher {
  kind?: string;
  name?: string;
}

/** A VM as far as its instance type and preference matchers (and their status references) go. */
export interface VmReferences {
  metadata?: { namespace?: string };
  spec?: { instancetype?: Matcher; preference?: Matcher };
  status?: Pick<NonNullable<VirtualMachine['status']>, 'instancetypeRef' | 'preferenceRef'>;
}

/** True when `vm` names an instance type or a preference. */
export function referencesInstancetype(vm: VmReferences): boolean {
  return !!(vm.spec?.instancetype?.name || vm.spec?.preference?.name);
}

/**
 * The stored instance type and preference `vm` names (each with its kind set), leaving out
 * one that does not exist. A VM without a namespace is read as in `default`.
 */
export async function referencedObjects(client: ObjectClient, vm: VmReferences): Promise<KubeObject[]> {
  const refs: Array<[Matcher | undefined, string, string]> = [
    [vm.spec?.instancetype, 'VirtualMachineClusterInstancetype', 'virtualmachineinstancetype'],
    [vm.spec?.preference, 'VirtualMachineClusterPreference', 'virtualmachinepreference'],
  ];
  const objects: KubeObject[] = [];
  for (const [m, clusterKind, singular] of refs) {
    if (!m?.name) continue;
    // Upstream's default when `kind` is empty is the cluster-wide kind.
    const namespaced = [singular, `${singular}s`].includes((m.kind ?? '').toLowerCase());
    const kind = namespaced ? clusterKind.replace('Cluster', '') : clusterKind;
    const type = InstancetypeResources[kind];
    if (!type) continue;
    const obj = await client
      .get<KubeObject>(type, m.name, type.namespaced ? (vm.metadata?.namespace ?? 'default') : undefined)
      .catch(() => undefined);
    if (obj) objects.push({ ...obj, kind });
  }
  return objects;
}

/**
 * The catalog holding what `vm` references, or undefined when it references nothing. As
 * upstream's SpecFinder, a matcher with a stored revision (its revisionName, or the VM's
 * status reference) reads the revision rather than the live object. A revision that cannot
 * be read leaves the live object: the VM controller reports that failure on the VM, and
 * admission does not block other changes to it.
 */
export async function catalogForVm(
  client: ObjectClient,
  vm: VmReferences,
): Promise<InstancetypeCatalog | undefined> {
  if (!referencesInstancetype(vm)) return undefined;
  const live = createInstancetypeCatalog(await referencedObjects(client, vm));
  return revisionCatalog(client, vm as VirtualMachine, live).catch(() => live);
}
