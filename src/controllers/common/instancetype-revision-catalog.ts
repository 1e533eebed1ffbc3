/**
 * Reading a VM's instance type and preference as upstream's SpecFinder does (shared by
 * virt-controller, which starts VMs from it, and virt-api, whose admission and
 * expand-spec see the VM the same way): from the ControllerRevision the VM references
 * (`spec.instancetype.revisionName`, else `status.instancetypeRef.controllerRevisionRef`
 * when that revision stores the object the matcher names), else the live object.
 */
import type {
  InstancetypeMatcher,
  InstancetypeStatusRef,
  PreferenceMatcher,
  VirtualMachine,
  VirtualMachineInstancetypeSpec,
  VirtualMachinePreferenceSpec,
} from '../../api/generated/types';
import type { InstancetypeCatalog } from '../../api/instancetype/catalog';
import {
  type ControllerRevision,
  RevisionLabels,
  referencedRevisionName,
  revisionInstancetypeSpec,
  revisionPreferenceSpec,
} from '../../api/instancetype/revision';
import { NotFoundError } from '../runtime/errors';
import { ControllerRevisionType } from '../runtime/resources';
import type { ObjectClient } from '../runtime/types';

/** Cached revisions by `namespace/name` (an informer's), consulted before the API server. */
export type RevisionCache = { get(key: string): ControllerRevision | undefined };

type VmRefs = Pick<VirtualMachine, 'metadata' | 'spec' | 'status'>;

/** The revision a matcher resolves from, or undefined to use the live object. */
async function referenced(
  client: ObjectClient,
  ns: string,
  matcher: InstancetypeMatcher | PreferenceMatcher | undefined,
  ref: InstancetypeStatusRef | undefined,
  cache: RevisionCache | undefined,
): Promise<ControllerRevision | undefined> {
  const r = referencedRevisionName(matcher, ref);
  if (!r) return undefined;
  let rev = cache?.get(`${ns}/${r.name}`);
  if (!rev) {
    try {
      rev = (await client.get(ControllerRevisionType, r.name, ns)) as ControllerRevision;
    } catch (err) {
      if (err instanceof NotFoundError) throw new Error(`ControllerRevision ${ns}/${r.name} not found`);
      throw err;
    }
  }
  // A status reference to a revision of another object (the matcher was just changed) is stale.
  if (
    r.checkObjectName !== undefined &&
    rev.metadata?.labels?.[RevisionLabels.objectName] !== r.checkObjectName
  )
    return undefined;
  return rev;
}

/**
 * A catalog answering `vm`'s matchers from its referenced revisions, else from `live`.
 * Throws when a referenced revision is missing or holds something else.
 */
export async function revisionCatalog(
  client: ObjectClient,
  vm: VmRefs,
  live: InstancetypeCatalog,
  cache?: RevisionCache,
): Promise<InstancetypeCatalog> {
  const ns = vm.metadata?.namespace ?? 'default';
  const itRev = await referenced(client, ns, vm.spec?.instancetype, vm.status?.instancetypeRef, cache);
  const pRev = await referenced(client, ns, vm.spec?.preference, vm.status?.preferenceRef, cache);
  const it: VirtualMachineInstancetypeSpec | undefined = itRev && revisionInstancetypeSpec(itRev);
  const pref: VirtualMachinePreferenceSpec | undefined = pRev && revisionPreferenceSpec(pRev);
  if (!it && !pref) return live;
  return {
    findInstancetype: (m, n) => it ?? live.findInstancetype(m, n),
    findPreference: (m, n) => pref ?? live.findPreference(m, n),
  };
}
