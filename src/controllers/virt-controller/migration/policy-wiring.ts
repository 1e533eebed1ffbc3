/**
 * Where the migration controller finds MigrationPolicies and namespace labels: an
 * informer on migrations.kubevirt.io's MigrationPolicy (when asked for: the kind must be
 * served) and, only while a policy exists, a GET of the VMI's Namespace at hand-off
 * (upstream's resolveMigrationConfig does the same).
 */
import type { MigrationPolicy } from '../../../api/generated/types';
import { NotFoundError } from '../../runtime/errors';
import type { SharedInformerFactory } from '../../runtime/informer';
import { MigrationPolicyType, NamespaceType } from '../../runtime/resources';
import type { KubeObject, ObjectClient } from '../../runtime/types';
import type { MigrationControllerDeps } from './controller';

/** The policy deps of the migration controller, or none when `enabled` is false. */
export function migrationPolicySource(
  informers: SharedInformerFactory,
  client: ObjectClient,
  enabled: boolean | undefined,
): Pick<MigrationControllerDeps, 'policies' | 'namespaceLabels'> {
  if (!enabled) return {};
  const informer = informers.informerFor(MigrationPolicyType);
  return {
    policies: () => informer.indexer.list() as unknown as MigrationPolicy[],
    namespaceLabels: async (ns) => {
      try {
        return (await client.get<KubeObject>(NamespaceType, ns)).metadata?.labels;
      } catch (e) {
        if (e instanceof NotFoundError) return undefined;
        throw e;
      }
    },
  };
}
