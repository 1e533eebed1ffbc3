/** Well-known resource types and helpers to name objects. */
import type { KubeObject, ResourceType } from './types';

/** `group/version`, or just `version` for the core group. */
export function apiVersionOf(type: ResourceType): string {
  return type.group ? `${type.group}/${type.version}` : type.version;
}

/** The cache/work-queue key of an object: `namespace/name`, or `name` when cluster-scoped. */
export function objectKey(obj: KubeObject): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? '';
  return ns ? `${ns}/${name}` : name;
}

/** Splits a key made by `objectKey` into namespace and name. */
export function splitKey(key: string): { namespace?: string; name: string } {
  const i = key.indexOf('/');
  return i < 0 ? { name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}

/** A resource type from where it lives in the API (one helper for every table of kinds). */
export function resourceType(
  group: string,
  version: string,
  kind: string,
  plural: string,
  namespaced: boolean,
  statusSubresource = false,
): ResourceType {
  return { group, version, kind, plural, namespaced, statusSubresource };
}
const rt = resourceType;

/** core/v1 Namespace (cluster-scoped). */
export const NamespaceType = rt('', 'v1', 'Namespace', 'namespaces', false, true);
/** core/v1 Pod: launcher pods, among others. */
export const PodType = rt('', 'v1', 'Pod', 'pods', true, true);
/** core/v1 ConfigMap. */
export const ConfigMapType = rt('', 'v1', 'ConfigMap', 'configmaps', true, false);
/** core/v1 Secret. */
export const SecretType = rt('', 'v1', 'Secret', 'secrets', true, false);
/** networking.k8s.io/v1 Ingress: CDI's config controller finds the upload proxy's host on them. */
export const IngressType = rt('networking.k8s.io', 'v1', 'Ingress', 'ingresses', true, true);
/** core/v1 Service. */
export const ServiceType = rt('', 'v1', 'Service', 'services', true, true);
/** core/v1 Node (cluster-scoped): labelled and heartbeated by virt-handler. */
export const NodeType = rt('', 'v1', 'Node', 'nodes', false, true);
/** core/v1 Event, written by `EventRecorder`. */
export const EventType = rt('', 'v1', 'Event', 'events', true, false);
/** core/v1 PersistentVolumeClaim. */
export const PersistentVolumeClaimType = rt(
  '',
  'v1',
  'PersistentVolumeClaim',
  'persistentvolumeclaims',
  true,
  true,
);
/** core/v1 PersistentVolume (cluster-scoped). */
export const PersistentVolumeType = rt('', 'v1', 'PersistentVolume', 'persistentvolumes', false, true);
/** apps/v1 ControllerRevision: the instance type and preference copies a VM is expanded from. */
export const ControllerRevisionType = rt(
  'apps',
  'v1',
  'ControllerRevision',
  'controllerrevisions',
  true,
  false,
);
/** coordination.k8s.io/v1 Lease: leader election (`LeaderElector`). */
export const LeaseType = rt('coordination.k8s.io', 'v1', 'Lease', 'leases', true, false);
/** apiextensions.k8s.io/v1 CustomResourceDefinition (cluster-scoped). */
export const CustomResourceDefinitionType = rt(
  'apiextensions.k8s.io',
  'v1',
  'CustomResourceDefinition',
  'customresourcedefinitions',
  false,
  true,
);

/** kubevirt.io/v1 VirtualMachine (status subresource). */
export const VirtualMachineType = rt('kubevirt.io', 'v1', 'VirtualMachine', 'virtualmachines', true, true);
/** Upstream's VMI CRD has no status subresource: virt-handler writes the whole object. */
export const VirtualMachineInstanceType = rt(
  'kubevirt.io',
  'v1',
  'VirtualMachineInstance',
  'virtualmachineinstances',
  true,
  false,
);
/** kubevirt.io/v1 VirtualMachineInstanceReplicaSet (status subresource). */
export const VirtualMachineInstanceReplicaSetType = rt(
  'kubevirt.io',
  'v1',
  'VirtualMachineInstanceReplicaSet',
  'virtualmachineinstancereplicasets',
  true,
  true,
);
/** kubevirt.io/v1 VirtualMachineInstanceMigration (status subresource). */
export const VirtualMachineInstanceMigrationType = rt(
  'kubevirt.io',
  'v1',
  'VirtualMachineInstanceMigration',
  'virtualmachineinstancemigrations',
  true,
  true,
);
/**
 * migrations.kubevirt.io/v1alpha1 MigrationPolicy (cluster-scoped): per-VMI migration
 * settings selected by labels. Served by its CRD on a cluster; not in the embedded store.
 */
export const MigrationPolicyType = rt(
  'migrations.kubevirt.io',
  'v1alpha1',
  'MigrationPolicy',
  'migrationpolicies',
  false,
  true,
);
/** kubevirt.io/v1 KubeVirt: the install and configuration CR, reconciled by virt-operator. */
export const KubeVirtType = rt('kubevirt.io', 'v1', 'KubeVirt', 'kubevirts', true, true);
/**
 * Multus's NetworkAttachmentDefinition (k8s.cni.cncf.io/v1): a secondary network's CNI
 * configuration in `spec.config`. Served by its CRD on a cluster (installed with
 * kubevirt-ts's); built in to the embedded store.
 */
export const NetworkAttachmentDefinitionType = rt(
  'k8s.cni.cncf.io',
  'v1',
  'NetworkAttachmentDefinition',
  'network-attachment-definitions',
  true,
  false,
);

/** instancetype.kubevirt.io/v1beta1: a VM's instance type and preference (no status). */
const instancetypeType = (kind: string, namespaced: boolean) =>
  rt('instancetype.kubevirt.io', 'v1beta1', kind, `${kind.toLowerCase()}s`, namespaced, false);
/** instancetype.kubevirt.io/v1beta1 VirtualMachineInstancetype (namespaced). */
export const VirtualMachineInstancetypeType = instancetypeType('VirtualMachineInstancetype', true);
/** instancetype.kubevirt.io/v1beta1 VirtualMachineClusterInstancetype (cluster-scoped). */
export const VirtualMachineClusterInstancetypeType = instancetypeType(
  'VirtualMachineClusterInstancetype',
  false,
);
/** instancetype.kubevirt.io/v1beta1 VirtualMachinePreference (namespaced). */
export const VirtualMachinePreferenceType = instancetypeType('VirtualMachinePreference', true);
/** instancetype.kubevirt.io/v1beta1 VirtualMachineClusterPreference (cluster-scoped). */
export const VirtualMachineClusterPreferenceType = instancetypeType('VirtualMachineClusterPreference', false);
/** The four instancetype.kubevirt.io kinds, by kind name. */
export const InstancetypeResources: Readonly<Record<string, ResourceType>> = {
  VirtualMachineInstancetype: VirtualMachineInstancetypeType,
  VirtualMachineClusterInstancetype: VirtualMachineClusterInstancetypeType,
  VirtualMachinePreference: VirtualMachinePreferenceType,
  VirtualMachineClusterPreference: VirtualMachineClusterPreferenceType,
};
/** The VirtualMachinePool resource (pool.kubevirt.io/v1beta1, status and scale subresources). */
export const VirtualMachinePoolType = rt(
  'pool.kubevirt.io',
  'v1beta1',
  'VirtualMachinePool',
  'virtualmachinepools',
  true,
  true,
);

/** cdi.kubevirt.io/v1beta1 DataVolume (CDI's CRDs on a cluster; built in to the embedded store). */
export const DataVolumeType = rt('cdi.kubevirt.io', 'v1beta1', 'DataVolume', 'datavolumes', true, true);
/** cdi.kubevirt.io/v1beta1 DataSource: a named source (claim or snapshot) DataVolumes and inference read. */
export const DataSourceType = rt('cdi.kubevirt.io', 'v1beta1', 'DataSource', 'datasources', true, true);
/** cdi.kubevirt.io/v1beta1 StorageProfile: a StorageClass's claim defaults, one per class. */
export const StorageProfileType = rt(
  'cdi.kubevirt.io',
  'v1beta1',
  'StorageProfile',
  'storageprofiles',
  false,
  true,
);
/** cdi.kubevirt.io/v1beta1 CDIConfig (cluster-scoped): CDI's settings, e.g. the filesystem overhead. */
export const CDIConfigType = rt('cdi.kubevirt.io', 'v1beta1', 'CDIConfig', 'cdiconfigs', false, true);
/** storage.k8s.io/v1 StorageClass: read for a DataVolume's default class and provisioner. */
export const StorageClassType = rt('storage.k8s.io', 'v1', 'StorageClass', 'storageclasses', false, false);
/** The CDI kinds the embedded store serves (local mode). */
export const cdiTypes: readonly ResourceType[] = [
  DataVolumeType,
  DataSourceType,
  StorageProfileType,
  CDIConfigType,
];

/** Built-in kinds the embedded store knows without a CRD. */
export const builtinTypes: readonly ResourceType[] = [
  NamespaceType,
  PodType,
  ConfigMapType,
  SecretType,
  ServiceType,
  NodeType,
  EventType,
  LeaseType,
  ControllerRevisionType,
  PersistentVolumeClaimType,
  PersistentVolumeType,
  StorageClassType,
  CustomResourceDefinitionType,
  NetworkAttachmentDefinitionType,
];

/**
 * The KubeVirt kinds (served by CRDs on a real cluster; built in to the embedded store, so
 * this is what local mode serves of KubeVirt's API groups): kubevirt.io's, the
 * instancetype.kubevirt.io kinds and pool.kubevirt.io's VirtualMachinePool.
 */
export const kubevirtTypes: readonly ResourceType[] = [
  VirtualMachineType,
  VirtualMachineInstanceType,
  VirtualMachineInstanceReplicaSetType,
  VirtualMachineInstanceMigrationType,
  KubeVirtType,
  ...Object.values(InstancetypeResources),
  VirtualMachinePoolType,
  ...cdiTypes,
];

/** The ResourceTypes a CustomResourceDefinition object serves (one per served version). */
export function typesFromCrd(crd: KubeObject): ResourceType[] {
  const spec = crd.spec as
    | {
        group?: string;
        scope?: string;
        names?: { kind?: string; plural?: string };
        versions?: { name: string; served?: boolean; subresources?: { status?: unknown } }[];
      }
    | undefined;
  if (!spec?.group || !spec.names?.plural || !spec.names.kind) return [];
  return (spec.versions ?? [])
    .filter((v) => v.served !== false)
    .map((v) =>
      rt(
        spec.group!,
        v.name,
        spec.names!.kind!,
        spec.names!.plural!,
        spec.scope !== 'Cluster',
        v.subresources?.status !== undefined,
      ),
    );
}
