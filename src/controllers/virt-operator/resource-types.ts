/** The kinds the operator installs, with where they live in the API. */
import {
  ConfigMapType,
  CustomResourceDefinitionType,
  resourceType as rt,
  SecretType,
  ServiceType,
} from '../runtime/resources';
import { StorageClassType, VolumeSnapshotClassType } from '../runtime/storage-resources';
import type { KubeObject, ResourceType } from '../runtime/types';

export const ServiceAccountType = rt('', 'v1', 'ServiceAccount', 'serviceaccounts', true);
export const DeploymentType = rt('apps', 'v1', 'Deployment', 'deployments', true, true);
export const DaemonSetType = rt('apps', 'v1', 'DaemonSet', 'daemonsets', true, true);
export const PodDisruptionBudgetType = rt(
  'policy',
  'v1',
  'PodDisruptionBudget',
  'poddisruptionbudgets',
  true,
  true,
);
const RBAC = 'rbac.authorization.k8s.io';
export const ClusterRoleType = rt(RBAC, 'v1', 'ClusterRole', 'clusterroles', false);
export const ClusterRoleBindingType = rt(RBAC, 'v1', 'ClusterRoleBinding', 'clusterrolebindings', false);
export const RoleType = rt(RBAC, 'v1', 'Role', 'roles', true);
export const RoleBindingType = rt(RBAC, 'v1', 'RoleBinding', 'rolebindings', true);
const ADM = 'admissionregistration.k8s.io';
export const MutatingWebhookConfigurationType = rt(
  ADM,
  'v1',
  'MutatingWebhookConfiguration',
  'mutatingwebhookconfigurations',
  false,
);
export const ValidatingWebhookConfigurationType = rt(
  ADM,
  'v1',
  'ValidatingWebhookConfiguration',
  'validatingwebhookconfigurations',
  false,
);
export const CSIDriverType = rt('storage.k8s.io', 'v1', 'CSIDriver', 'csidrivers', false);
export const APIServiceType = rt('apiregistration.k8s.io', 'v1', 'APIService', 'apiservices', false, true);

/**
 * Every installed kind (the namespace is the operator manifest's, never the operator's to
 * delete), in the order objects are created (what others need first) and
 * the reverse of the order they are deleted.
 */
export const installedTypes: readonly ResourceType[] = [
  CustomResourceDefinitionType,
  ServiceAccountType,
  ClusterRoleType,
  ClusterRoleBindingType,
  RoleType,
  RoleBindingType,
  SecretType,
  ConfigMapType,
  ServiceType,
  DeploymentType,
  PodDisruptionBudgetType,
  DaemonSetType,
  CSIDriverType,
  StorageClassType,
  // Served by a CRD the operator creates where absent: listed as empty until it is established.
  VolumeSnapshotClassType,
  APIServiceType,
  MutatingWebhookConfigurationType,
  ValidatingWebhookConfigurationType,
];

/** The type of an object by its apiVersion and kind; throws for a kind the operator does not install. */
export function typeOf(obj: KubeObject): ResourceType {
  const t = installedTypes.find(
    (t) => t.kind === obj.kind && (t.group ? `${t.group}/${t.version}` : t.version) === obj.apiVersion,
  );
  if (!t)
    throw new Error(
      `virt-operator: no resource type for ${obj.apiVersion} ${obj.kind} ${obj.metadata?.name}`,
    );
  return t;
}
