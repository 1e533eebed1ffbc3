import { AlreadyExistsError, KubeClient, type ResourceType } from '../../../src/controllers/runtime';
import { integration } from '../../support/integration';
import { available, sharedControlPlane, unavailableReason } from '../../support/kube';
import { objectClientContract } from './contract';

// The same contract against a real kube-apiserver (with kube-controller-manager's garbage collector).
objectClientContract('real kube-apiserver (KubeClient)', async () => {
  if (!integration('kube-apiserver', available(), unavailableReason)) return undefined;
  const cp = await sharedControlPlane();
  const client = KubeClient.fromKubeconfig(cp.kubeconfigPath, { qps: 200, burst: 400 });
  await grantGarbageCollector(client);
  return {
    client,
    garbageCollector: true,
    close: async () => client.close(),
  };
});

const ClusterRoleBindingType: ResourceType = {
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  kind: 'ClusterRoleBinding',
  plural: 'clusterrolebindings',
  namespaced: false,
};

/**
 * The test control plane runs kube-controller-manager as the single user
 * system:kube-controller-manager without --use-service-account-credentials, so RBAC denies
 * its garbage collector every delete ("cannot delete resource configmaps"). Bind that user
 * to the garbage collector's own bootstrap role, which is what the per-controller service
 * account would hold. Remove once test/support/kube.ts passes that flag.
 */
async function grantGarbageCollector(client: KubeClient): Promise<void> {
  try {
    await client.create(ClusterRoleBindingType, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'kubevirt-ts-test-garbage-collector' },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'ClusterRole',
        name: 'system:controller:generic-garbage-collector',
      },
      subjects: [
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'system:kube-controller-manager' },
      ],
    } as never);
  } catch (err) {
    if (!(err instanceof AlreadyExistsError)) throw err;
  }
}
