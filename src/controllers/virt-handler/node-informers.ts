/**
 * What a handler watches: the VMIs bound to its node, the VMIs migrating to it (upstream's
 * migration target informer) and the launcher pods on it, indexed by the VMI that created
 * them. VMIs and pods come from separate factories so each can be started and synced on
 * its own.
 */

import { Labels } from '../../api/labels';
import { MigrationLabels } from '../common/migration-labels';
import { VmiResource } from '../common/vmi-resource';
import { type Informer, SharedInformerFactory } from '../runtime/informer';
import { PodType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';

const LAUNCHER_LABEL = 'kubevirt.io=virt-launcher';
const CREATED_BY = 'kubevirt.io/created-by';

/** The pod index by the uid of the VMI that created the pod (its `kubevirt.io/created-by` label). */
export const BY_CREATOR = 'createdBy';

/** The informers of one node's handler. */
export interface NodeInformers {
  informers: SharedInformerFactory;
  podInformers: SharedInformerFactory;
  vmis: Informer<KubeObject>;
  targets: Informer<KubeObject>;
  pods: Informer<KubeObject>;
}

/** Creates (does not start) the informers for node `nodeName`. */
export function nodeInformers(client: ObjectClient, nodeName: string): NodeInformers {
  const informers = new SharedInformerFactory(client);
  const podInformers = new SharedInformerFactory(client);
  const vmis = informers.informerFor(VmiResource, { labelSelector: `${Labels.nodeName}=${nodeName}` });
  const targets = informers.informerFor(VmiResource, {
    labelSelector: `${MigrationLabels.targetNode}=${nodeName}`,
  });
  const pods = podInformers.informerFor(PodType, {
    labelSelector: LAUNCHER_LABEL,
    fieldSelector: `spec.nodeName=${nodeName}`,
  });
  pods.indexer.addIndex(BY_CREATOR, (p) => {
    const v = p.metadata?.labels?.[CREATED_BY];
    return v ? [v] : [];
  });
  return { informers, podInformers, vmis, targets, pods };
}
