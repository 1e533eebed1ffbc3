/**
 * The group/version/kind registry of the KubeVirt API groups: for every kind, its
 * resource names, scope, served versions, subresources and printer columns, as upstream
 * KubeVirt registers them (pkg/virt-operator/resource/generate/components/crds.go).
 * The CRD generator and the manifest loader both read it.
 */
import type {
  KubeVirt,
  MigrationPolicy,
  VirtualMachine,
  VirtualMachineBackup,
  VirtualMachineClone,
  VirtualMachineClusterInstancetype,
  VirtualMachineClusterPreference,
  VirtualMachineExport,
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
  VirtualMachineInstancePreset,
  VirtualMachineInstanceReplicaSet,
  VirtualMachineInstancetype,
  VirtualMachinePool,
  VirtualMachinePreference,
  VirtualMachineRestore,
  VirtualMachineSnapshot,
  VirtualMachineSnapshotContent,
} from './generated/types';

/** A column `kubectl get` prints (CRD additionalPrinterColumns). */
export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  /** 0 shows by default; 1 only with `-o wide`. */
  priority?: number;
}

/** One version of a kind as the API server serves it. */
export interface ServedVersion {
  name: string;
  served: boolean;
  /** Exactly one version per kind is the storage version. */
  storage: boolean;
  deprecated?: boolean;
  deprecationWarning?: string;
}

/** The scale subresource's paths (for ReplicaSets and Pools). */
export interface ScaleSubresource {
  specReplicasPath: string;
  statusReplicasPath: string;
  labelSelectorPath: string;
}

/** Everything the project knows about one kind. */
export interface KindInfo {
  group: string;
  kind: string;
  plural: string;
  singular: string;
  shortNames: readonly string[];
  categories: readonly string[];
  namespaced: boolean;
  /**
   * The version whose schema the swagger document defines and that objects are converted
   * to on load (all served versions share it upstream: the conversion strategy is None).
   */
  version: string;
  versions: readonly ServedVersion[];
  /** Swagger definition of the object, e.g. `v1.VirtualMachine`. */
  definition: string;
  /** The generated TypeScript type name, e.g. `VirtualMachine`. */
  typeName: keyof KnownKinds;
  subresources: { status?: boolean; scale?: ScaleSubresource };
  printerColumns: readonly PrinterColumn[];
  /** Labels upstream puts on the CRD object. */
  crdLabels: Readonly<Record<string, string>>;
}

/** Kind name -> its TypeScript object type, for every kind in {@link kinds}. */
export interface KnownKinds {
  VirtualMachine: VirtualMachine;
  VirtualMachineInstance: VirtualMachineInstance;
  VirtualMachineInstanceReplicaSet: VirtualMachineInstanceReplicaSet;
  VirtualMachineInstanceMigration: VirtualMachineInstanceMigration;
  VirtualMachineInstancePreset: VirtualMachineInstancePreset;
  KubeVirt: KubeVirt;
  VirtualMachinePool: VirtualMachinePool;
  VirtualMachineInstancetype: VirtualMachineInstancetype;
  VirtualMachineClusterInstancetype: VirtualMachineClusterInstancetype;
  VirtualMachinePreference: VirtualMachinePreference;
  VirtualMachineClusterPreference: VirtualMachineClusterPreference;
  MigrationPolicy: MigrationPolicy;
  VirtualMachineSnapshot: VirtualMachineSnapshot;
  VirtualMachineSnapshotContent: VirtualMachineSnapshotContent;
  VirtualMachineRestore: VirtualMachineRestore;
  VirtualMachineExport: VirtualMachineExport;
  VirtualMachineClone: VirtualMachineClone;
  VirtualMachineBackup: VirtualMachineBackup;
}

/** The name of a known kind. */
export type KnownKind = keyof KnownKinds;
/** Any object of a known kind. */
export type KnownObject = KnownKinds[KnownKind];

export const KUBEVIRT_GROUP = 'kubevirt.io';

const AGE: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };
const PHASE: PrinterColumn = { name: 'Phase', type: 'string', jsonPath: '.status.phase' };
const ERROR: PrinterColumn = { name: 'Error', type: 'string', jsonPath: '.status.error.message' };
const ALL = ['all'] as const;
const APP_LABEL = { 'kubevirt.io': '' } as const;

/** kubevirt.io serves v1 (storage) and the deprecated v1alpha3 with the same schema. */
const CORE_VERSIONS: readonly ServedVersion[] = [
  { name: 'v1', served: true, storage: true },
  {
    name: 'v1alpha3',
    served: true,
    storage: false,
    deprecated: true,
    deprecationWarning: 'kubevirt.io/v1alpha3 is now deprecated and will be removed in a future release.',
  },
];

function oldAndStorage(old: string, current: string, warning?: string): readonly ServedVersion[] {
  const first: ServedVersion = { name: old, served: true, storage: false };
  if (warning) Object.assign(first, { deprecated: true, deprecationWarning: warning });
  return [first, { name: current, served: true, storage: true }];
}

const ONLY = (v: string): readonly ServedVersion[] => [{ name: v, served: true, storage: true }];

const SCALE: ScaleSubresource = {
  specReplicasPath: '.spec.replicas',
  statusReplicasPath: '.status.replicas',
  labelSelectorPath: '.status.labelSelector',
};

/** Every kind of the KubeVirt API groups, in upstream's order. */
export const kinds: readonly KindInfo[] = [
  {
    group: KUBEVIRT_GROUP,
    kind: 'VirtualMachineInstance',
    plural: 'virtualmachineinstances',
    singular: 'virtualmachineinstance',
    shortNames: ['vmi', 'vmis'],
    categories: ALL,
    namespaced: true,
    version: 'v1',
    versions: CORE_VERSIONS,
    definition: 'v1.VirtualMachineInstance',
    typeName: 'VirtualMachineInstance',
    // Upstream's VMI CRD has no status subresource: virt-handler writes the whole object.
    subresources: {},
    printerColumns: [
      AGE,
      PHASE,
      { name: 'IP', type: 'string', jsonPath: '.status.interfaces[0].ipAddress' },
      { name: 'NodeName', type: 'string', jsonPath: '.status.nodeName' },
      { name: 'Ready', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].status" },
      {
        name: 'Live-Migratable',
        type: 'string',
        jsonPath: ".status.conditions[?(@.type=='LiveMigratable')].status",
        priority: 1,
      },
      {
        name: 'Paused',
        type: 'string',
        jsonPath: ".status.conditions[?(@.type=='Paused')].status",
        priority: 1,
      },
    ],
    crdLabels: APP_LABEL,
  },
  {
    group: KUBEVIRT_GROUP,
    kind: 'VirtualMachine',
    plural: 'virtualmachines',
    singular: 'virtualmachine',
    shortNames: ['vm', 'vms'],
    categories: ALL,
    namespaced: true,
    version: 'v1',
    versions: CORE_VERSIONS,
    definition: 'v1.VirtualMachine',
    typeName: 'VirtualMachine',
    subresources: { status: true },
    printerColumns: [
      AGE,
      {
        name: 'Status',
        type: 'string',
        jsonPath: '.status.printableStatus',
        description: 'Human Readable Status',
      },
      { name: 'Ready', type: 'string', jsonPath: ".status.conditions[?(@.type=='Ready')].status" },
    ],
    crdLabels: APP_LABEL,
  },
  {
    group: KUBEVIRT_GROUP,
    kind: 'VirtualMachineInstancePreset',
    plural: 'virtualmachineinstancepresets',
    singular: 'virtualmachineinstancepreset',
    shortNames: ['vmipreset', 'vmipresets'],
    categories: ALL,
    namespaced: true,
    version: 'v1',
    // Upstream still stores presets as v1alpha3; both versions are deprecated.
    versions: [
      {
        name: 'v1',
        served: true,
        storage: false,
        deprecated: true,
        deprecationWarning:
          'kubevirt.io/v1 VirtualMachineInstancePresets is now deprecated and will be removed in v2.',
      },
      {
        name: 'v1alpha3',
        served: true,
        storage: true,
        deprecated: true,
        deprecationWarning:
          'kubevirt.io/v1alpha3 VirtualMachineInstancePresets is now deprecated and will be removed in v2.',
      },
    ],
    definition: 'v1.VirtualMachineInstancePreset',
    typeName: 'VirtualMachineInstancePreset',
    subresources: {},
    printerColumns: [],
    crdLabels: APP_LABEL,
  },
  {
    group: KUBEVIRT_GROUP,
    kind: 'VirtualMachineInstanceReplicaSet',
    plural: 'virtualmachineinstancereplicasets',
    singular: 'virtualmachineinstancereplicaset',
    shortNames: ['vmirs', 'vmirss'],
    categories: ALL,
    namespaced: true,
    version: 'v1',
    versions: CORE_VERSIONS,
    definition: 'v1.VirtualMachineInstanceReplicaSet',
    typeName: 'VirtualMachineInstanceReplicaSet',
    subresources: { status: true, scale: SCALE },
    printerColumns: [
      {
        name: 'Desired',
        type: 'integer',
        jsonPath: '.spec.replicas',
        description: 'Number of desired VirtualMachineInstances',
      },
      {
        name: 'Current',
        type: 'integer',
        jsonPath: '.status.replicas',
        description: 'Number of managed and not final or deleted VirtualMachineInstances',
      },
      {
        name: 'Ready',
        type: 'integer',
        jsonPath: '.status.readyReplicas',
        description: 'Number of managed VirtualMachineInstances which are ready to receive traffic',
      },
      AGE,
    ],
    crdLabels: APP_LABEL,
  },
  {
    group: KUBEVIRT_GROUP,
    kind: 'VirtualMachineInstanceMigration',
    plural: 'virtualmachineinstancemigrations',
    singular: 'virtualmachineinstancemigration',
    shortNames: ['vmim', 'vmims'],
    categories: ALL,
    namespaced: true,
    version: 'v1',
    versions: CORE_VERSIONS,
    definition: 'v1.VirtualMachineInstanceMigration',
    typeName: 'VirtualMachineInstanceMigration',
    subresources: { status: true },
    printerColumns: [
      { ...PHASE, description: 'The current phase of VM instance migration' },
      {
        name: 'VMI',
        type: 'string',
        jsonPath: '.spec.vmiName',
        description: 'The name of the VMI to perform the migration on',
      },
    ],
    crdLabels: APP_LABEL,
  },
  {
    group: KUBEVIRT_GROUP,
    kind: 'KubeVirt',
    plural: 'kubevirts',
    singular: 'kubevirt',
    shortNames: ['kv', 'kvs'],
    categories: ALL,
    namespaced: true,
    version: 'v1',
    versions: CORE_VERSIONS,
    definition: 'v1.KubeVirt',
    typeName: 'KubeVirt',
    subresources: { status: true },
    printerColumns: [AGE, PHASE],
    crdLabels: { 'operator.kubevirt.io': '' },
  },
  {
    group: 'pool.kubevirt.io',
    kind: 'VirtualMachinePool',
    plural: 'virtualmachinepools',
    singular: 'virtualmachinepool',
    shortNames: ['vmpool', 'vmpools'],
    categories: ALL,
    namespaced: true,
    version: 'v1beta1',
    versions: oldAndStorage('v1alpha1', 'v1beta1'),
    definition: 'v1beta1.VirtualMachinePool',
    typeName: 'VirtualMachinePool',
    subresources: { status: true, scale: SCALE },
    printerColumns: [
      {
        name: 'Desired',
        type: 'integer',
        jsonPath: '.spec.replicas',
        description: 'Number of desired VirtualMachines',
      },
      {
        name: 'Current',
        type: 'integer',
        jsonPath: '.status.replicas',
        description: 'Number of managed and not final or deleted VirtualMachines',
      },
      {
        name: 'Ready',
        type: 'integer',
        jsonPath: '.status.readyReplicas',
        description: 'Number of managed VirtualMachines which are ready to receive traffic',
      },
      AGE,
    ],
    crdLabels: APP_LABEL,
  },
  {
    group: 'snapshot.kubevirt.io',
    kind: 'VirtualMachineSnapshot',
    plural: 'virtualmachinesnapshots',
    singular: 'virtualmachinesnapshot',
    shortNames: ['vmsnapshot', 'vmsnapshots'],
    categories: ALL,
    namespaced: true,
    version: 'v1beta1',
    versions: oldAndStorage('v1alpha1', 'v1beta1'),
    definition: 'v1beta1.VirtualMachineSnapshot',
    typeName: 'VirtualMachineSnapshot',
    subresources: { status: true },
    printerColumns: [
      { name: 'SourceKind', type: 'string', jsonPath: '.spec.source.kind' },
      { name: 'SourceName', type: 'string', jsonPath: '.spec.source.name' },
      PHASE,
      { name: 'ReadyToUse', type: 'boolean', jsonPath: '.status.readyToUse' },
      { name: 'CreationTime', type: 'date', jsonPath: '.status.creationTime' },
      ERROR,
    ],
    crdLabels: APP_LABEL,
  },
  {
    group: 'snapshot.kubevirt.io',
    kind: 'VirtualMachineSnapshotContent',
    plural: 'virtualmachinesnapshotcontents',
    singular: 'virtualmachinesnapshotcontent',
    shortNames: ['vmsnapshotcontent', 'vmsnapshotcontents'],
    categories: ALL,
    namespaced: true,
    version: 'v1beta1',
    versions: oldAndStorage('v1alpha1', 'v1beta1'),
    definition: 'v1beta1.VirtualMachineSnapshotContent',
    typeName: 'VirtualMachineSnapshotContent',
    subresources: { status: true },
    printerColumns: [
      { name: 'ReadyToUse', type: 'boolean', jsonPath: '.status.readyToUse' },
      { name: 'CreationTime', type: 'date', jsonPath: '.status.creationTime' },
      ERROR,
    ],
    crdLabels: APP_LABEL,
  },
  {
    group: 'snapshot.kubevirt.io',
    kind: 'VirtualMachineRestore',
    plural: 'virtualmachinerestores',
    singular: 'virtualmachinerestore',
    shortNames: ['vmrestore', 'vmrestores'],
    categories: ALL,
    namespaced: true,
    version: 'v1beta1',
    versions: oldAndStorage('v1alpha1', 'v1beta1'),
    definition: 'v1beta1.VirtualMachineRestore',
    typeName: 'VirtualMachineRestore',
    subresources: { status: true },
    printerColumns: [
      { name: 'TargetKind', type: 'string', jsonPath: '.spec.target.kind' },
      { name: 'TargetName', type: 'string', jsonPath: '.spec.target.name' },
      { name: 'Complete', type: 'boolean', jsonPath: '.status.complete' },
      { name: 'RestoreTime', type: 'date', jsonPath: '.status.restoreTime' },
    ],
    crdLabels: APP_LABEL,
  },
  {
    group: 'export.kubevirt.io',
    kind: 'VirtualMachineExport',
    plural: 'virtualmachineexports',
    singular: 'virtualmachineexport',
    shortNames: ['vmexport', 'vmexports'],
    categories: ALL,
    namespaced: true,
    version: 'v1',
    versions: oldAndStorage(
      'v1beta1',
      'v1',
      'export.kubevirt.io/v1beta1 VirtualMachineExport is now deprecated and will be removed in a future version.',
    ),
    definition: 'v1.VirtualMachineExport',
    typeName: 'VirtualMachineExport',
    subresources: { status: true },
    printerColumns: [
      { name: 'SourceKind', type: 'string', jsonPath: '.spec.source.kind' },
      { name: 'SourceName', type: 'string', jsonPath: '.spec.source.name' },
      PHASE,
    ],
    crdLabels: APP_LABEL,
  },
  {
    group: 'backup.kubevirt.io',
    kind: 'VirtualMachineBackup',
    plural: 'virtualmachinebackups',
    singular: 'virtualmachinebackup',
    shortNames: ['vmbackup', 'vmbackups'],
    categories: ALL,
    namespaced: true,
    version: 'v1alpha1',
    versions: ONLY('v1alpha1'),
    definition: 'v1alpha1.VirtualMachineBackup',
    typeName: 'VirtualMachineBackup',
    subresources: { status: true },
    printerColumns: [
      { name: 'SourceKind', type: 'string', jsonPath: '.spec.source.kind' },
      { name: 'SourceName', type: 'string', jsonPath: '.spec.source.name' },
      { name: 'Type', type: 'string', jsonPath: '.status.type' },
      { name: 'CheckpointName', type: 'string', jsonPath: '.status.checkpointName' },
    ],
    crdLabels: APP_LABEL,
  },
  {
    group: 'instancetype.kubevirt.io',
    kind: 'VirtualMachineInstancetype',
    plural: 'virtualmachineinstancetypes',
    singular: 'virtualmachineinstancetype',
    shortNames: ['vminstancetype', 'vminstancetypes', 'vmf', 'vmfs'],
    categories: ALL,
    namespaced: true,
    version: 'v1beta1',
    versions: ONLY('v1beta1'),
    definition: 'v1beta1.VirtualMachineInstancetype',
    typeName: 'VirtualMachineInstancetype',
    subresources: {},
    printerColumns: [],
    crdLabels: APP_LABEL,
  },
  {
    group: 'instancetype.kubevirt.io',
    kind: 'VirtualMachineClusterInstancetype',
    plural: 'virtualmachineclusterinstancetypes',
    singular: 'virtualmachineclusterinstancetype',
    shortNames: ['vmclusterinstancetype', 'vmclusterinstancetypes', 'vmcf', 'vmcfs'],
    categories: [],
    namespaced: false,
    version: 'v1beta1',
    versions: ONLY('v1beta1'),
    definition: 'v1beta1.VirtualMachineClusterInstancetype',
    typeName: 'VirtualMachineClusterInstancetype',
    subresources: {},
    printerColumns: [],
    crdLabels: APP_LABEL,
  },
  {
    group: 'instancetype.kubevirt.io',
    kind: 'VirtualMachinePreference',
    plural: 'virtualmachinepreferences',
    singular: 'virtualmachinepreference',
    shortNames: ['vmpref', 'vmprefs', 'vmp', 'vmps'],
    categories: ALL,
    namespaced: true,
    version: 'v1beta1',
    versions: ONLY('v1beta1'),
    definition: 'v1beta1.VirtualMachinePreference',
    typeName: 'VirtualMachinePreference',
    subresources: {},
    printerColumns: [],
    crdLabels: APP_LABEL,
  },
  {
    group: 'instancetype.kubevirt.io',
    kind: 'VirtualMachineClusterPreference',
    plural: 'virtualmachineclusterpreferences',
    singular: 'virtualmachineclusterpreference',
    shortNames: ['vmcp', 'vmcps'],
    categories: [],
    namespaced: false,
    version: 'v1beta1',
    versions: ONLY('v1beta1'),
    definition: 'v1beta1.VirtualMachineClusterPreference',
    typeName: 'VirtualMachineClusterPreference',
    subresources: {},
    printerColumns: [],
    crdLabels: APP_LABEL,
  },
  {
    group: 'migrations.kubevirt.io',
    kind: 'MigrationPolicy',
    plural: 'migrationpolicies',
    singular: 'migrationpolicy',
    shortNames: [],
    categories: [],
    namespaced: false,
    version: 'v1alpha1',
    versions: ONLY('v1alpha1'),
    definition: 'v1alpha1.MigrationPolicy',
    typeName: 'MigrationPolicy',
    subresources: { status: true },
    printerColumns: [],
    crdLabels: APP_LABEL,
  },
  {
    group: 'clone.kubevirt.io',
    kind: 'VirtualMachineClone',
    plural: 'virtualmachineclones',
    singular: 'virtualmachineclone',
    shortNames: ['vmclone', 'vmclones'],
    categories: ALL,
    namespaced: true,
    version: 'v1beta1',
    versions: oldAndStorage('v1alpha1', 'v1beta1'),
    definition: 'v1beta1.VirtualMachineClone',
    typeName: 'VirtualMachineClone',
    subresources: { status: true },
    printerColumns: [
      PHASE,
      { name: 'SourceVirtualMachine', type: 'string', jsonPath: '.spec.source.name' },
      { name: 'TargetVirtualMachine', type: 'string', jsonPath: '.spec.target.name' },
    ],
    crdLabels: APP_LABEL,
  },
];

/** Splits `group/version` (or core `v1`) into its parts. */
export function parseApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** The `apiVersion` objects of this kind are converted to (its schema version). */
export function apiVersionOf(info: KindInfo): string {
  return `${info.group}/${info.version}`;
}

/** The kind registered under `kind` in `group`, whatever the version. */
export function findKind(group: string, kind: string): KindInfo | undefined {
  return kinds.find((k) => k.group === group && k.kind === kind);
}

/** The kind for an object's `apiVersion` and `kind`, only if that version is served. */
export function lookupKind(
  apiVersion: string,
  kind: string,
): { info: KindInfo; version: ServedVersion } | undefined {
  const { group, version } = parseApiVersion(apiVersion);
  const info = findKind(group, kind);
  const served = info?.versions.find((v) => v.name === version && v.served);
  return info && served ? { info, version: served } : undefined;
}

/** The kind a resource name refers to: plural, singular, short name or kind (case-insensitive). */
export function kindForResource(resource: string): KindInfo | undefined {
  const r = resource.toLowerCase();
  return kinds.find(
    (k) => k.plural === r || k.singular === r || k.kind.toLowerCase() === r || k.shortNames.includes(r),
  );
}
