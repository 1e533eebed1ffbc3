/**
 * The VM controller's instance type revisions (upstream pkg/instancetype/revision's Store
 * and find's revision-first SpecFinder): stores the instance type and preference a VM
 * names as ControllerRevisions owned by the VM, references them from the VM's status, and
 * resolves the VM's matchers from those copies, so that editing the live object does not
 * change the VM. Clearing `status.instancetypeRef.controllerRevisionRef` (or naming
 * another object) makes the next sync store the current object.
 */
import type {
  InstancetypeMatcher,
  InstancetypeStatusRef,
  PreferenceMatcher,
  VirtualMachine,
} from '../../../api/generated/types';
import {
  createInstancetypeCatalog,
  type InstancetypeCatalog,
  type InstancetypeObjectCatalog,
  instancetypeMatcherKind,
  preferenceMatcherKind,
} from '../../../api/instancetype/catalog';
import { expandVirtualMachine } from '../../../api/instancetype/expand';
import {
  buildRevision,
  type ControllerRevision,
  type InstancetypeObject,
  sameRevisionData,
  syncStatusRef,
} from '../../../api/instancetype/revision';
import type { Lister } from '../../common/controller-ports';
import { revisionCatalog } from '../../common/instancetype-revision-catalog';
import { controllerRef } from '../../common/owner-ref';
import { AlreadyExistsError } from '../../runtime/errors';
import { ControllerRevisionType } from '../../runtime/resources';
import { sameJson } from '../../runtime/same-json';
import type { KubeObject, ObjectClient } from '../../runtime/types';

/** What {@link InstancetypeRevisions} needs. */
export interface InstancetypeRevisionsDeps {
  client: ObjectClient;
  /** The live instance types and preferences. */
  catalog: () => InstancetypeObjectCatalog;
  /** Cached ControllerRevisions (`namespace/name`); a miss is read from the API server. */
  revisions?: Lister<ControllerRevision>;
}

/** The status references a sync changed (only those that changed are set). */
export interface RevisionRefs {
  instancetypeRef?: InstancetypeStatusRef;
  preferenceRef?: InstancetypeStatusRef;
}

type Which = 'instancetype' | 'preference';

function notFound(which: Which, kind: string, name: string): Error {
  return new Error(
    `spec.${which}: Failure to find ${which}: ${kind.toLowerCase()}s.instancetype.kubevirt.io "${name}" not found`,
  );
}

/** Stores and reads a VM's instance type and preference revisions. */
export class InstancetypeRevisions {
  constructor(private readonly d: InstancetypeRevisionsDeps) {}

  /**
   * One VM sync: the status references to write first (`refs`), or the catalog to expand
   * the VM with, or the error that stops its sync (upstream's FailedCreate). A VM naming
   * neither an instance type nor a preference gets nothing.
   */
  async sync(
    vm: VirtualMachine,
  ): Promise<{ refs?: RevisionRefs; catalog?: InstancetypeCatalog; error?: string }> {
    if (!vm.spec.instancetype && !vm.spec.preference) return {};
    try {
      const refs = await this.store(vm);
      return refs ? { refs } : { catalog: await this.catalogFor(vm) };
    } catch (err) {
      return {
        error: `error encountered while storing instancetype.kubevirt.io controllerRevisions: ${(err as Error).message}`,
      };
    }
  }

  /**
   * Upstream's Store: makes sure each matcher of `vm` has a revision referenced from its
   * status, creating the revision from the live object where none is referenced. Returns
   * the references that changed (to be written to the VM's status), or undefined.
   */
  async store(vm: VirtualMachine): Promise<RevisionRefs | undefined> {
    const out: RevisionRefs = {};
    for (const which of ['instancetype', 'preference'] as const) {
      const matcher = vm.spec[which];
      if (!matcher) continue;
      const statusKey = which === 'instancetype' ? 'instancetypeRef' : 'preferenceRef';
      const current = vm.status?.[statusKey];
      const { ref, needsRevision } = syncStatusRef(matcher, current);
      if (needsRevision) {
        const stored = await this.storeRevision(vm, this.liveObject(vm, which, matcher));
        ref.controllerRevisionRef = { name: stored.metadata?.name ?? '' };
      }
      if (!sameJson(ref, current ?? {})) out[statusKey] = ref;
    }
    return out.instancetypeRef || out.preferenceRef ? out : undefined;
  }

  /**
   * A catalog resolving `vm`'s matchers as upstream's SpecFinder does: from the referenced
   * revision when there is one (the matcher's revisionName, else the status reference when
   * it stores the object the matcher names), else from the live object.
   */
  async catalogFor(vm: VirtualMachine): Promise<InstancetypeCatalog> {
    return revisionCatalog(this.d.client, vm, this.d.catalog(), this.d.revisions);
  }

  private liveObject(
    vm: VirtualMachine,
    which: Which,
    matcher: InstancetypeMatcher | PreferenceMatcher,
  ): InstancetypeObject {
    if (matcher.inferFromVolume) {
      throw new Error(
        `spec.${which}.inferFromVolume: ${matcher.inferFromVolume} was not inferred (virt-api's mutating webhook infers it when the VM is admitted)`,
      );
    }
    const ns = vm.metadata?.namespace ?? 'default';
    const catalog = this.d.catalog();
    const kind = which === 'instancetype' ? instancetypeMatcherKind(matcher) : preferenceMatcherKind(matcher);
    if (!kind) {
      const Which = which === 'instancetype' ? 'InstancetypeMatcher' : 'PreferenceMatcher';
      throw new Error(`spec.${which}.kind: got unexpected kind in ${Which}: ${matcher.kind}`);
    }
    const obj =
      which === 'instancetype'
        ? catalog.instancetypeObject(matcher, ns)
        : catalog.preferenceObject(matcher, ns);
    if (!obj) throw notFound(which, kind, matcher.name ?? '');
    if (which === 'instancetype') {
      // As upstream: the instance type may have changed since admission; refuse to store one
      // that conflicts with the VM's template.
      const probe: VirtualMachine = { ...vm, spec: { ...vm.spec, preference: undefined } };
      const r = expandVirtualMachine(probe, createInstancetypeCatalog([{ ...obj, kind }]));
      if (r.errors.length > 0) throw new Error(r.errors.map((e) => `${e.path}: ${e.message}`).join('; '));
    }
    return { ...obj, kind } as InstancetypeObject;
  }

  /** Upstream's storeControllerRevision: create, or accept an existing one holding the same data. */
  private async storeRevision(vm: VirtualMachine, obj: InstancetypeObject): Promise<ControllerRevision> {
    const ns = vm.metadata?.namespace ?? 'default';
    const rev = buildRevision(vm.metadata?.name ?? '', ns, obj);
    rev.metadata = {
      ...rev.metadata,
      ownerReferences: [controllerRef('kubevirt.io/v1', 'VirtualMachine', vm)],
    };
    try {
      return (await this.d.client.create(ControllerRevisionType, rev as KubeObject)) as ControllerRevision;
    } catch (err) {
      if (!(err instanceof AlreadyExistsError)) {
        throw new Error(`failed to create ControllerRevision: ${(err as Error).message}`);
      }
    }
    const name = rev.metadata?.name ?? '';
    const existing = (await this.d.client.get(ControllerRevisionType, name, ns)) as ControllerRevision;
    if (!sameRevisionData(rev, existing, sameJson)) {
      throw new Error(`found existing ControllerRevision with unexpected data: ${name}`);
    }
    return existing;
  }
}
