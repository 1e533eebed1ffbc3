/**
 * Instance type and preference revisions (upstream pkg/instancetype/revision and find):
 * the first time the VM controller sees a VM's instance type or preference it stores a
 * copy of the object in an apps/v1 ControllerRevision owned by the VM and references it
 * from `status.instancetypeRef` / `status.preferenceRef`; the VM is expanded from that
 * copy afterwards, so editing the instance type does not change the VM. Pure functions:
 * naming, the revision's data and labels, reading a spec back, comparing two revisions,
 * and syncing a status reference with the VM's matcher.
 */
import type {
  InstancetypeMatcher,
  InstancetypeStatusRef,
  ObjectMeta,
  PreferenceMatcher,
  VirtualMachineInstancetypeSpec,
  VirtualMachinePreferenceSpec,
} from '../generated/types';
import { InstancetypeKinds } from './catalog';

/** The instancetype.kubevirt.io version revisions store (upstream's LatestVersion). */
export const INSTANCETYPE_VERSION = 'v1beta1';
const INSTANCETYPE_API_VERSION = `instancetype.kubevirt.io/${INSTANCETYPE_VERSION}`;

/** Labels upstream puts on a revision, naming the object stored in it. */
export const RevisionLabels = {
  objectGeneration: 'instancetype.kubevirt.io/object-generation',
  objectKind: 'instancetype.kubevirt.io/object-kind',
  objectName: 'instancetype.kubevirt.io/object-name',
  objectUid: 'instancetype.kubevirt.io/object-uid',
  objectVersion: 'instancetype.kubevirt.io/object-version',
} as const;

/** An instance type or preference object as read from the API (kind set). */
export interface InstancetypeObject {
  apiVersion?: string;
  kind: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    generation?: number;
    resourceVersion?: string;
    creationTimestamp?: unknown;
  };
  spec?: unknown;
}

/** An apps/v1 ControllerRevision (the fields this project reads and writes). */
export interface ControllerRevision {
  apiVersion?: string;
  kind?: string;
  metadata?: ObjectMeta;
  data?: unknown;
  revision?: number;
}

/** Upstream's GenerateName: `<vm>-<object>-<version>-<object uid>-<object generation>`. */
export function revisionName(vmName: string, obj: InstancetypeObject): string {
  const m = obj.metadata ?? {};
  return `${vmName}-${m.name ?? ''}-${INSTANCETYPE_VERSION}-${m.uid ?? ''}-${m.generation ?? 0}`;
}

/**
 * The revision storing `obj` for the VM `vmName` in `namespace` (owner references are the
 * caller's). As upstream, the stored object keeps its identity (name, uid, generation) and
 * spec, and drops labels, annotations, finalizers, owner references and managed fields.
 */
export function buildRevision(
  vmName: string,
  namespace: string,
  obj: InstancetypeObject,
): ControllerRevision {
  const m = obj.metadata ?? {};
  const meta: NonNullable<InstancetypeObject['metadata']> = { name: m.name };
  if (m.namespace) meta.namespace = m.namespace;
  if (m.uid) meta.uid = m.uid;
  if (m.generation !== undefined) meta.generation = m.generation;
  if (m.resourceVersion) meta.resourceVersion = m.resourceVersion;
  if (m.creationTimestamp) meta.creationTimestamp = m.creationTimestamp;
  return {
    apiVersion: 'apps/v1',
    kind: 'ControllerRevision',
    metadata: {
      name: revisionName(vmName, obj),
      namespace,
      labels: {
        [RevisionLabels.objectGeneration]: String(m.generation ?? 0),
        [RevisionLabels.objectKind]: obj.kind,
        [RevisionLabels.objectName]: m.name ?? '',
        [RevisionLabels.objectUid]: m.uid ?? '',
        [RevisionLabels.objectVersion]: INSTANCETYPE_VERSION,
      },
    },
    data: {
      apiVersion: INSTANCETYPE_API_VERSION,
      kind: obj.kind,
      metadata: meta,
      spec: structuredClone(obj.spec ?? {}),
    },
    revision: 0,
  };
}

const instancetypeKinds: readonly string[] = [
  InstancetypeKinds.instancetype,
  InstancetypeKinds.clusterInstancetype,
];
const preferenceKinds: readonly string[] = [
  InstancetypeKinds.preference,
  InstancetypeKinds.clusterPreference,
];

/** The stored object of a revision, or an error naming the revision and what is wrong. */
function storedObject(rev: ControllerRevision, kinds: readonly string[]): { kind: string; spec: unknown } {
  const name = rev.metadata?.name ?? '';
  const data = rev.data as { apiVersion?: string; kind?: string; spec?: unknown } | undefined;
  if (!data || typeof data !== 'object') throw new Error(`ControllerRevision ${name}: data is empty`);
  if (!kinds.includes(data.kind ?? '')) {
    throw new Error(
      `ControllerRevision ${name}: data.kind ${data.kind ?? '(none)'} is not one of ${kinds.join(', ')}`,
    );
  }
  // Older versions (v1alpha1/v1alpha2) would need upstream's conversion; this project never wrote them.
  if (data.apiVersion !== INSTANCETYPE_API_VERSION) {
    throw new Error(
      `ControllerRevision ${name}: data.apiVersion ${data.apiVersion ?? '(none)'} is not supported (only ${INSTANCETYPE_API_VERSION})`,
    );
  }
  return { kind: data.kind ?? '', spec: data.spec ?? {} };
}

/** The instance type spec stored in a revision; throws when it holds something else. */
export function revisionInstancetypeSpec(rev: ControllerRevision): VirtualMachineInstancetypeSpec {
  return storedObject(rev, instancetypeKinds).spec as VirtualMachineInstancetypeSpec;
}

/** The preference spec stored in a revision; throws when it holds something else. */
export function revisionPreferenceSpec(rev: ControllerRevision): VirtualMachinePreferenceSpec {
  return storedObject(rev, preferenceKinds).spec as VirtualMachinePreferenceSpec;
}

/** Upstream's Compare: two revisions hold the same kind and spec (key order and absent keys aside). */
export function sameRevisionData(
  a: ControllerRevision,
  b: ControllerRevision,
  equal: (x: unknown, y: unknown) => boolean,
): boolean {
  const kinds = [...instancetypeKinds, ...preferenceKinds];
  const x = storedObject(a, kinds);
  const y = storedObject(b, kinds);
  return x.kind === y.kind && equal(x.spec, y.spec);
}

/**
 * Upstream's syncStatusWithMatcher without the store: the status reference updated from
 * the matcher. A changed name, kind or inferFromVolume drops the stored revision reference
 * (the VM now points elsewhere); a matcher's revisionName is taken as the reference.
 * `needsRevision` says a revision must be stored and referenced.
 */
export function syncStatusRef(
  matcher: InstancetypeMatcher | PreferenceMatcher,
  current: InstancetypeStatusRef | undefined,
): { ref: InstancetypeStatusRef; needsRevision: boolean } {
  const ref: InstancetypeStatusRef = structuredClone(current ?? {});
  let clear = false;
  if (matcher.name && matcher.name !== ref.name) {
    ref.name = matcher.name;
    clear = true;
  }
  if (matcher.kind && matcher.kind !== ref.kind) {
    ref.kind = matcher.kind;
    clear = true;
  }
  if (matcher.inferFromVolume && matcher.inferFromVolume !== ref.inferFromVolume) {
    ref.inferFromVolume = matcher.inferFromVolume;
    clear = true;
  }
  if (clear) delete ref.controllerRevisionRef;
  if (matcher.inferFromVolumeFailurePolicy)
    ref.inferFromVolumeFailurePolicy = matcher.inferFromVolumeFailurePolicy;
  if (matcher.revisionName && ref.controllerRevisionRef?.name !== matcher.revisionName)
    ref.controllerRevisionRef = { name: matcher.revisionName };
  return { ref, needsRevision: !ref.controllerRevisionRef?.name };
}

/**
 * The revision name a VM's instance type or preference is read from (upstream's
 * revisionFinder): the matcher's revisionName, else the status reference's when that
 * revision is of the object the matcher names (`objectName` is its label, checked by the
 * caller once the revision is read). Undefined: read the live object.
 */
export function referencedRevisionName(
  matcher: InstancetypeMatcher | PreferenceMatcher | undefined,
  ref: InstancetypeStatusRef | undefined,
): { name: string; checkObjectName?: string } | undefined {
  if (!matcher) return undefined;
  if (matcher.revisionName) return { name: matcher.revisionName };
  const name = ref?.controllerRevisionRef?.name;
  return name ? { name, checkObjectName: matcher.name ?? '' } : undefined;
}
