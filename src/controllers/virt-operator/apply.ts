/**
 * Makes the cluster hold exactly the desired install objects: missing ones are created,
 * ones whose `install-strategy-identifier` differs from the rendering are replaced (the
 * live resourceVersion kept, and what the server assigns that cannot change, such as a
 * Service's clusterIP), and objects carrying the operator's label that the rendering no
 * longer has are deleted. Objects are listed by the label, so the operator finds what it
 * created even after a restart. An object marked created-if-absent (the VolumeSnapshot
 * CRDs) is only created where missing, and the cluster's snapshot CRDs are never deleted.
 */
import { AlreadyExistsError, NotFoundError } from '../runtime/errors';
import { CustomResourceDefinitionType, objectKey } from '../runtime/resources';
import { VolumeSnapshotClassType } from '../runtime/storage-resources';
import type { KubeObject, ObjectClient, ResourceType } from '../runtime/types';
import {
  createdIfAbsent,
  FOREIGN_NAMESPACES,
  INSTALL_NAMESPACE_LABEL,
  MANAGED_BY,
  MANAGED_BY_LABEL,
  upToDate,
} from './bookkeeping';
import { isSnapshotCrd } from './components/storage';
import { installedTypes, typeOf } from './resource-types';

/** What one pass changed, as `Kind namespace/name`. */
export interface ApplyResult {
  created: string[];
  updated: string[];
  deleted: string[];
}

const id = (t: ResourceType, o: KubeObject) => `${t.kind} ${objectKey(o)}`;

/**
 * Every object of `type` the operator manages: for namespaced kinds those in `namespace`,
 * and those of this install in the other namespaces it renders into (kube-system).
 */
export async function listManaged(
  client: ObjectClient,
  type: ResourceType,
  namespace: string,
): Promise<KubeObject[]> {
  try {
    return await listManagedOf(client, type, namespace);
  } catch (e) {
    // A kind served by a CRD of the install (VolumeSnapshotClass) before that CRD is
    // established: none exist yet; the next pass creates them.
    if (e instanceof NotFoundError) return [];
    throw e;
  }
}

async function listManagedOf(
  client: ObjectClient,
  type: ResourceType,
  namespace: string,
): Promise<KubeObject[]> {
  const selector = `${MANAGED_BY_LABEL}=${MANAGED_BY}`;
  const items = type.namespaced
    ? [
        ...(await client.list(type, { namespace, labelSelector: selector })).items,
        ...(
          await Promise.all(
            FOREIGN_NAMESPACES.filter((ns) => ns !== namespace).map((ns) =>
              client.list(type, {
                namespace: ns,
                labelSelector: `${selector},${INSTALL_NAMESPACE_LABEL}=${namespace}`,
              }),
            ),
          )
        ).flatMap((l) => l.items),
      ]
    : (await client.list(type, { labelSelector: selector })).items;
  // List items come without kind and apiVersion: put them back, callers tell kinds apart.
  const apiVersion = type.group ? `${type.group}/${type.version}` : type.version;
  return items.map((o) => ({ ...o, apiVersion, kind: type.kind }));
}

/** Fields the server sets once and refuses to have changed or cleared. */
function keepImmutable(type: ResourceType, live: KubeObject, desired: KubeObject): KubeObject {
  if (type.kind !== 'Service') return desired;
  const ls = (live.spec ?? {}) as Record<string, unknown>;
  const ds = { ...((desired.spec ?? {}) as Record<string, unknown>) };
  for (const k of ['clusterIP', 'clusterIPs', 'ipFamilies', 'ipFamilyPolicy'])
    if (ds[k] === undefined && ls[k] !== undefined) ds[k] = ls[k];
  return { ...desired, spec: ds };
}

/** Creates or replaces one desired object; returns what it did. */
export async function applyOne(
  client: ObjectClient,
  desired: KubeObject,
  live: KubeObject | undefined,
): Promise<'created' | 'updated' | 'unchanged'> {
  const type = typeOf(desired);
  if (!live) {
    try {
      await client.create(type, desired);
      return 'created';
    } catch (e) {
      if (!(e instanceof AlreadyExistsError)) throw e;
      // Made by someone else or before a restart without our label: adopt it.
      live = await client.get(type, desired.metadata!.name!, desired.metadata?.namespace);
    }
  }
  if (upToDate(live, desired)) return 'unchanged';
  const next = keepImmutable(type, live, desired);
  await client.update(type, {
    ...next,
    metadata: { ...next.metadata, resourceVersion: live.metadata?.resourceVersion },
  });
  return 'updated';
}

/**
 * Creates `desired` unless an object of its name exists, whoever made it; never adopts,
 * updates or labels an existing one. Returns whether it created it.
 */
async function createIfAbsent(
  client: ObjectClient,
  type: ResourceType,
  desired: KubeObject,
): Promise<boolean> {
  try {
    await client.get(type, desired.metadata!.name!, desired.metadata?.namespace);
    return false;
  } catch (e) {
    if (!(e instanceof NotFoundError)) throw e;
  }
  try {
    await client.create(type, desired);
    return true;
  } catch (e) {
    if (e instanceof AlreadyExistsError) return false;
    throw e;
  }
}

/**
 * Objects no pass deletes, not even at removal: those created only where absent, and the
 * CSI snapshot CRDs whatever their labels (an earlier operator adopted and labelled them;
 * deleting one deletes every VolumeSnapshot of the cluster).
 */
function neverDeleted(obj: KubeObject): boolean {
  return createdIfAbsent(obj) || isSnapshotCrd(obj);
}

/**
 * One pass over every installed kind in creation order. `hold(obj)` returns true for a
 * desired object that must keep its current version for now (virt-handler during an
 * upgrade, until virt-api and virt-controller are ready); a held object that does not
 * exist yet is still created.
 */
export async function applyAll(
  client: ObjectClient,
  namespace: string,
  desired: KubeObject[],
  hold: (obj: KubeObject) => boolean = () => false,
): Promise<ApplyResult> {
  const result: ApplyResult = { created: [], updated: [], deleted: [] };
  for (const type of installedTypes) {
    const want = desired.filter((o) => typeOf(o) === type);
    const live = await listManaged(client, type, namespace);
    const byKey = new Map(live.map((o) => [objectKey(o), o]));
    for (const d of want) {
      if (createdIfAbsent(d)) {
        if (await createIfAbsent(client, type, d)) result.created.push(id(type, d));
        continue;
      }
      const l = byKey.get(objectKey(d));
      if (l && hold(d)) continue;
      let r: Awaited<ReturnType<typeof applyOne>>;
      try {
        r = await applyOne(client, d, l);
      } catch (e) {
        // Its kind's CRD, created above, is not served yet: the next pass creates it.
        if (e instanceof NotFoundError && type === VolumeSnapshotClassType) continue;
        throw e;
      }
      if (r !== 'unchanged') result[r].push(id(type, d));
    }
    const wanted = new Set(want.map(objectKey));
    for (const l of live) {
      if (wanted.has(objectKey(l)) || neverDeleted(l)) continue;
      await deleteQuietly(client, type, l);
      result.deleted.push(id(type, l));
    }
  }
  return result;
}

/** Deletes an object, ignoring one already gone. */
export async function deleteQuietly(
  client: ObjectClient,
  type: ResourceType,
  obj: KubeObject,
): Promise<void> {
  try {
    await client.delete(type, obj.metadata!.name!, {
      namespace: obj.metadata?.namespace,
      propagationPolicy: 'Background',
    });
  } catch (e) {
    if (!(e instanceof NotFoundError)) throw e;
  }
}

/**
 * Deletes the managed CRDs ({@link neverDeleted} ones kept) and returns how many of them
 * are still there (being dropped with their objects), as upstream's DeleteAll does first:
 * while the CRDs go, virt-controller still runs to release its finalizers on their
 * objects (a VM's VMI deleted, then the VM's finalizer), so the components go after them.
 */
export async function deleteCrdsFirst(
  client: ObjectClient,
  namespace: string,
): Promise<{ deleted: string[]; left: number }> {
  const deleted: string[] = [];
  let left = 0;
  for (const l of await listManaged(client, CustomResourceDefinitionType, namespace)) {
    if (neverDeleted(l)) continue;
    left++;
    if (l.metadata?.deletionTimestamp) continue;
    await deleteQuietly(client, CustomResourceDefinitionType, l);
    deleted.push(id(CustomResourceDefinitionType, l));
  }
  return { deleted, left };
}

/**
 * Deletes every managed object but those {@link neverDeleted} keeps, in reverse creation
 * order; returns what it deleted.
 */
export async function deleteAll(client: ObjectClient, namespace: string): Promise<string[]> {
  const deleted: string[] = [];
  for (const type of [...installedTypes].reverse()) {
    for (const l of await listManaged(client, type, namespace)) {
      if (neverDeleted(l)) continue;
      await deleteQuietly(client, type, l);
      deleted.push(id(type, l));
    }
  }
  return deleted;
}
