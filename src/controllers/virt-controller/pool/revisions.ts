/**
 * Pool revisions (upstream ensureControllerRevision, getControllerRevision and
 * pruneUnusedRevisions): an apps/v1 ControllerRevision `<pool>-<generation>` owned by the
 * pool holds the pool's spec at that generation; VMs and VMIs carry its name in
 * `kubevirt.io/vm-pool-revision-name`, so the controller can tell whether a running VMI
 * was started from the template its VM has now. Revisions never change once written, so
 * the ones read are cached (keyed by namespace, name and owning pool uid).
 */
import type { VirtualMachinePool, VirtualMachinePoolSpec } from '../../../api/generated/types';
import type { ControllerRevision } from '../../../api/instancetype/revision';
import { controllerRef } from '../../common/owner-ref';
import { AlreadyExistsError, NotFoundError } from '../../runtime/errors';
import { ControllerRevisionType } from '../../runtime/resources';
import type { KubeObject, ObjectClient } from '../../runtime/types';

/** The revision name of the pool's current spec. */
export function poolRevisionName(pool: VirtualMachinePool): string {
  return `${pool.metadata?.name}-${pool.metadata?.generation ?? 1}`;
}

/** Reads and writes a pool's ControllerRevisions. */
export class PoolRevisions {
  private readonly cache = new Map<string, VirtualMachinePoolSpec>();
  /** Pools (by uid) whose unused revisions were all pruned since their last new revision. */
  private readonly clean = new Set<string>();

  constructor(
    private readonly client: ObjectClient,
    private readonly onWrite?: (verb: 'create' | 'delete') => void,
  ) {}

  /** Creates the revision of the pool's current spec if missing; returns its name. */
  async ensure(pool: VirtualMachinePool): Promise<string> {
    const name = poolRevisionName(pool);
    if (await this.spec(pool, name)) return name;
    const ns = pool.metadata?.namespace ?? '';
    const rev: ControllerRevision = {
      apiVersion: 'apps/v1',
      kind: 'ControllerRevision',
      metadata: {
        name,
        namespace: ns,
        ownerReferences: [controllerRef('pool.kubevirt.io/v1beta1', 'VirtualMachinePool', pool)],
      },
      data: pool.spec,
      revision: pool.metadata?.generation ?? 1,
    };
    try {
      await this.client.create(ControllerRevisionType, rev as KubeObject);
      this.onWrite?.('create');
    } catch (err) {
      if (!(err instanceof AlreadyExistsError)) throw err;
      // Another owner's (a deleted pool of the same name, not yet collected): wait for it to go.
      if (!(await this.spec(pool, name)))
        throw new Error(`ControllerRevision ${ns}/${name} exists and is not this pool's`);
    }
    this.clean.delete(pool.metadata?.uid ?? '');
    this.cache.set(this.key(pool, name), structuredClone(pool.spec));
    return name;
  }

  /** The pool spec stored in revision `name`, if it exists and belongs to this pool. */
  async spec(pool: VirtualMachinePool, name: string): Promise<VirtualMachinePoolSpec | undefined> {
    const key = this.key(pool, name);
    const hit = this.cache.get(key);
    if (hit) return hit;
    let rev: ControllerRevision;
    try {
      rev = (await this.client.get(
        ControllerRevisionType,
        name,
        pool.metadata?.namespace,
      )) as ControllerRevision;
    } catch (err) {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    }
    const owned = (rev.metadata?.ownerReferences ?? []).some(
      (r) => r.controller && r.uid === pool.metadata?.uid,
    );
    if (!owned || !rev.data) return undefined;
    const spec = rev.data as VirtualMachinePoolSpec;
    this.cache.set(key, spec);
    return spec;
  }

  /**
   * Deletes the pool's revisions no VM or VMI names in `inUse` (upstream
   * pruneUnusedRevisions); lists them only while a pool may have unused ones.
   */
  async prune(pool: VirtualMachinePool, inUse: ReadonlySet<string>): Promise<void> {
    const uid = pool.metadata?.uid ?? '';
    if (this.clean.has(uid)) return;
    const ns = pool.metadata?.namespace;
    const revs = (await this.client.list(ControllerRevisionType, { namespace: ns })).items.filter((r) =>
      (r.metadata?.ownerReferences ?? []).some((o) => o.controller && o.uid === uid),
    );
    let left = 0;
    for (const r of revs) {
      const name = r.metadata?.name ?? '';
      if (inUse.has(name)) {
        left++;
        continue;
      }
      try {
        await this.client.delete(ControllerRevisionType, name, { namespace: ns });
        this.onWrite?.('delete');
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
      }
      this.cache.delete(this.key(pool, name));
    }
    if (left <= 1) this.clean.add(uid);
  }

  private key(pool: VirtualMachinePool, name: string): string {
    return `${pool.metadata?.namespace}/${name}/${pool.metadata?.uid}`;
  }
}
