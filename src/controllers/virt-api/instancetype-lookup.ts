/**
 * The instance type and preference a VirtualMachine references, read from the API server
 * for its admission (upstream's VM admitter expands the VM the same way). Only the two
 * objects named are read; a missing one is left out of the catalog and the VM's
 * validation reports it.
 */
import type { InstancetypeCatalog } from '../../api/instancetype/catalog';
import { createInstancetypeCatalog } from '../../api/instancetype/catalog';
import type { KubeObject, ObjectClient, ResourceType } from '../runtime/types';

const it = (kind: string, plural: string, namespaced: boolean): ResourceType => ({
  group: 'instancetype.kubevirt.io',
  version: 'v1beta1',
  kind,
  plural,
  namespaced,
  statusSubresource: false,
});

/** instancetype.kubevirt.io kinds by their names in a VM's matcher. */
export const InstancetypeResources: Record<string, ResourceType> = {
  VirtualMachineInstancetype: it('VirtualMachineInstancetype', 'virtualmachineinstancetypes', true),
  VirtualMachineClusterInstancetype: it(
    'VirtualMachineClusterInstancetype',
    'virtualmachineclusterinstancetypes',
    false,
  ),
  VirtualMachinePreference: it('VirtualMachinePreference', 'virtualmachinepreferences', true),
  VirtualMachineClusterPreference: it(
    'VirtualMachineClusterPreference',
    'virtualmachineclusterpreferences',
    false,
  ),
};

interface Matcher {
  kind?: string;
  name?: string;
}

/** The catalog holding what `vm` references, or undefined when it references nothing. */
export async function catalogForVm(
  client: ObjectClient,
  vm: { metadata?: { namespace?: string }; spec?: { instancetype?: Matcher; preference?: Matcher } },
): Promise<InstancetypeCatalog | undefined> {
  const refs: Array<[Matcher | undefined, string, string]> = [
    [vm.spec?.instancetype, 'VirtualMachineClusterInstancetype', 'virtualmachineinstancetype'],
    [vm.spec?.preference, 'VirtualMachineClusterPreference', 'virtualmachinepreference'],
  ];
  if (!refs.some(([m]) => m?.name)) return undefined;
  const objects: KubeObject[] = [];
  for (const [m, clusterKind, singular] of refs) {
    if (!m?.name) continue;
    // Upstream's default when `kind` is empty is the cluster-wide kind.
    const namespaced = !!m.kind && m.kind.toLowerCase() === singular;
    const kind = namespaced ? clusterKind.replace('Cluster', '') : clusterKind;
    const type = InstancetypeResources[kind];
    if (!type) continue;
    const obj = await client
      .get<KubeObject>(type, m.name, type.namespaced ? vm.metadata?.namespace : undefined)
      .catch(() => undefined);
    if (obj) objects.push({ ...obj, kind });
  }
  return createInstancetypeCatalog(objects);
}
