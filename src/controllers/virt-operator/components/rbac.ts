/** Builders of the RBAC objects each component file renders for its ServiceAccount. */
import type { KubeObject } from '../../runtime/types';
import { componentLabels } from './install-options';

/** A policy rule. */
export interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
  resourceNames?: string[];
}

/** A ServiceAccount. */
export function serviceAccount(name: string, namespace: string): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: { name, namespace, labels: componentLabels(name) },
  } as KubeObject;
}

/** A ClusterRole `name` with `rules` and its binding to ServiceAccount `namespace/name`. */
export function clusterRoleFor(name: string, namespace: string, rules: Rule[]): KubeObject[] {
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: `kubevirt-ts-${name}`, labels: componentLabels(name) },
      rules,
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: `kubevirt-ts-${name}`, labels: componentLabels(name) },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `kubevirt-ts-${name}` },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  ] as unknown as KubeObject[];
}

/** A Role `name` in `namespace` with `rules` and its binding to the ServiceAccount of the same name. */
export function roleFor(name: string, namespace: string, rules: Rule[]): KubeObject[] {
  return [
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name, namespace, labels: componentLabels(name) },
      rules,
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name, namespace, labels: componentLabels(name) },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name, namespace }],
    },
  ] as unknown as KubeObject[];
}
