/**
 * The instance type caches virt-controller hands the VM controller: informers over the
 * instancetype.kubevirt.io kinds read as one catalog, and the ControllerRevisions holding
 * the VMs' instance type and preference copies.
 */
import { kinds } from '../../api/groups';
import {
  createInstancetypeCatalog,
  InstancetypeKinds,
  type InstancetypeObjectCatalog,
} from '../../api/instancetype/catalog';
import { type ControllerRevision, RevisionLabels } from '../../api/instancetype/revision';
import type { Lister } from '../common/controller-ports';
import { lister } from '../common/controller-wiring';
import type { SharedInformerFactory } from '../runtime/informer';
import { ControllerRevisionType } from '../runtime/resources';
import type { VirtControllerOptions } from './virt-controller-options';

/**
 * The catalog (`opts.catalog`, else informers when `opts.instancetypes`) and, when there
 * is one, a lister over the revisions; neither when VMs may not reference instance types.
 */
export function watchInstancetypes(
  informers: SharedInformerFactory,
  opts: Pick<VirtControllerOptions, 'catalog' | 'instancetypes'>,
): { catalog?: () => InstancetypeObjectCatalog; revisions?: Lister<ControllerRevision> } {
  const catalog = opts.catalog ?? (opts.instancetypes ? instancetypeCatalog(informers) : undefined);
  if (!catalog) return {};
  // Only the revisions this project labels (a user's revisionName is read on a cache miss).
  const revisionInformer = informers.informerFor(ControllerRevisionType, {
    labelSelector: RevisionLabels.objectKind,
  });
  return { catalog, revisions: lister<ControllerRevision>(revisionInformer) };
}

/** A catalog over informers of the four instancetype kinds (built on use). */
function instancetypeCatalog(informers: SharedInformerFactory): () => InstancetypeObjectCatalog {
  const wanted = Object.values(InstancetypeKinds) as string[];
  const infs = kinds
    .filter((k) => k.group === 'instancetype.kubevirt.io' && wanted.includes(k.kind))
    .map((k) =>
      informers.informerFor(
        {
          group: k.group,
          version: k.version,
          kind: k.kind,
          plural: k.plural,
          namespaced: k.namespaced,
          statusSubresource: false,
        },
        {},
      ),
    );
  // List items from an API server carry no kind: the catalog needs it.
  return () =>
    createInstancetypeCatalog(
      infs.flatMap((inf) => inf.indexer.list().map((o) => ({ ...o, kind: inf.type.kind }))),
    );
}
