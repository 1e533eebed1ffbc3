/**
 * The table of every kind of the KubeVirt API groups, in upstream's order, as upstream
 * KubeVirt registers them (pkg/virt-operator/resource/generate/components/crds.go). Each
 * entry says what differs from the common case (see {@link kind}).
 */
import type { KindInfo, PrinterColumn, ScaleSubresource, ServedVersion } from './kind-info';

/** The core KubeVirt API group, of VirtualMachine, VirtualMachineInstance and the KubeVirt CR. */
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

/** Desired/Current/Ready replica columns of a replicated kind managing `what`. */
function replicaColumns(what: string): PrinterColumn[] {
  return [
    {
      name: 'Desired',
      type: 'integer',
      jsonPath: '.spec.replicas',
      description: `Number of desired ${what}`,
    },
    {
      name: 'Current',
      type: 'integer',
      jsonPath: '.status.replicas',
      description: `Number of managed and not final or deleted ${what}`,
    },
    {
      name: 'Ready',
      type: 'integer',
      jsonPath: '.status.readyReplicas',
      description: `Number of managed ${what} which are ready to receive traffic`,
    },
    AGE,
  ];
}

const SOURCE_COLUMNS: PrinterColumn[] = [
  { name: 'SourceKind', type: 'string', jsonPath: '.spec.source.kind' },
  { name: 'SourceName', type: 'string', jsonPath: '.spec.source.name' },
];

/** What an entry must say; the rest follows the common case. */
type KindSpec = Pick<KindInfo, 'group' | 'kind' | 'shortNames' | 'version' | 'versions'> &
  Partial<Pick<KindInfo, 'plural' | 'namespaced' | 'subresources' | 'printerColumns' | 'crdLabels'>>;

/**
 * A table entry: singular is the lower-cased kind and plural it plus `s`; namespaced, then
 * in category `all`; the definition `<version>.<Kind>` and the TypeScript type named as the
 * kind; a status subresource; no printer columns; the `kubevirt.io` CRD label.
 */
function kind(spec: KindSpec): KindInfo {
  const singular = spec.kind.toLowerCase();
  const namespaced = spec.namespaced ?? true;
  return {
    group: spec.group,
    kind: spec.kind,
    plural: spec.plural ?? `${singular}s`,
    singular,
    shortNames: spec.shortNames,
    categories: namespaced ? ALL : [],
    namespaced,
    version: spec.version,
    versions: spec.versions,
    definition: `${spec.version}.${spec.kind}`,
    typeName: spec.kind as KindInfo['typeName'],
    subresources: spec.subresources ?? { status: true },
    printerColumns: spec.printerColumns ?? [],
    crdLabels: spec.crdLabels ?? APP_LABEL,
  };
}

/** Every kind of the KubeVirt API groups, in upstream's order. */
export const kinds: readonly KindInfo[] = [
  kind({
    group: KUBEVIRT_GROUP,
    kind: 'VirtualMachineInstance',
    shortNames: ['vmi', 'vmis'],
    version: 'v1',
    versions: CORE_VERSIONS,
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
  }),
  kind({
    group: KUBEVIRT_GROUP,
    kind: 'VirtualMachine',
    shortNames: ['vm', 'vms'],
    version: 'v1',
    versions: CORE_VERSIONS,
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
  }),
  kind({
    group: KUBEVIRT_GROUP,
    kind: 'VirtualMachineInstancePreset',
    shortNames: ['vmipreset', 'vmipresets'],
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
    subresources: {},
  }),
  kind({
    group: KUBEVIRT_GROUP,
    kind: 'VirtualMachineInstanceReplicaSet',
    shortNames: ['vmirs', 'vmirss'],
    version: 'v1',
    versions: CORE_VERSIONS,
    subresources: { status: true, scale: SCALE },
    printerColumns: replicaColumns('VirtualMachineInstances'),
  }),
  kind({
    group: KUBEVIRT_GROUP,
    kind: 'VirtualMachineInstanceMigration',
    shortNames: ['vmim', 'vmims'],
    version: 'v1',
    versions: CORE_VERSIONS,
    printerColumns: [
      { ...PHASE, description: 'The current phase of VM instance migration' },
      {
        name: 'VMI',
        type: 'string',
        jsonPath: '.spec.vmiName',
        description: 'The name of the VMI to perform the migration on',
      },
    ],
  }),
  kind({
    group: KUBEVIRT_GROUP,
    kind: 'KubeVirt',
    shortNames: ['kv', 'kvs'],
    version: 'v1',
    versions: CORE_VERSIONS,
    printerColumns: [AGE, PHASE],
    crdLabels: { 'operator.kubevirt.io': '' },
  }),
  kind({
    group: 'pool.kubevirt.io',
    kind: 'VirtualMachinePool',
    shortNames: ['vmpool', 'vmpools'],
    version: 'v1beta1',
    versions: oldAndStorage('v1alpha1', 'v1beta1'),
    subresources: { status: true, scale: SCALE },
    printerColumns: replicaColumns('VirtualMachines'),
  }),
  kind({
    group: 'snapshot.kubevirt.io',
    kind: 'VirtualMachineSnapshot',
    shortNames: ['vmsnapshot', 'vmsnapshots'],
    version: 'v1beta1',
    versions: oldAndStorage('v1alpha1', 'v1beta1'),
    printerColumns: [
      ...SOURCE_COLUMNS,
      PHASE,
      { name: 'ReadyToUse', type: 'boolean', jsonPath: '.status.readyToUse' },
      { name: 'CreationTime', type: 'date', jsonPath: '.status.creationTime' },
      ERROR,
    ],
  }),
  kind({
    group: 'snapshot.kubevirt.io',
    kind: 'VirtualMachineSnapshotContent',
    shortNames: ['vmsnapshotcontent', 'vmsnapshotcontents'],
    version: 'v1beta1',
    versions: oldAndStorage('v1alpha1', 'v1beta1'),
    printerColumns: [
      { name: 'ReadyToUse', type: 'boolean', jsonPath: '.status.readyToUse' },
      { name: 'CreationTime', type: 'date', jsonPath: '.status.creationTime' },
      ERROR,
    ],
  }),
  kind({
    group: 'snapshot.kubevirt.io',
    kind: 'VirtualMachineRestore',
    shortNames: ['vmrestore', 'vmrestores'],
    version: 'v1beta1',
    versions: oldAndStorage('v1alpha1', 'v1beta1'),
    printerColumns: [
      { name: 'TargetKind', type: 'string', jsonPath: '.spec.target.kind' },
      { name: 'TargetName', type: 'string', jsonPath: '.spec.target.name' },
      { name: 'Complete', type: 'boolean', jsonPath: '.status.complete' },
      { name: 'RestoreTime', type: 'date', jsonPath: '.status.restoreTime' },
    ],
  }),
  kind({
    group: 'export.kubevirt.io',
    kind: 'VirtualMachineExport',
    shortNames: ['vmexport', 'vmexports'],
    version: 'v1',
    versions: oldAndStorage(
      'v1beta1',
      'v1',
      'export.kubevirt.io/v1beta1 VirtualMachineExport is now deprecated and will be removed in a future version.',
    ),
    printerColumns: [...SOURCE_COLUMNS, PHASE],
  }),
  kind({
    group: 'backup.kubevirt.io',
    kind: 'VirtualMachineBackup',
    shortNames: ['vmbackup', 'vmbackups'],
    version: 'v1alpha1',
    versions: ONLY('v1alpha1'),
    printerColumns: [
      ...SOURCE_COLUMNS,
      { name: 'Type', type: 'string', jsonPath: '.status.type' },
      { name: 'CheckpointName', type: 'string', jsonPath: '.status.checkpointName' },
    ],
  }),
  kind({
    group: 'instancetype.kubevirt.io',
    kind: 'VirtualMachineInstancetype',
    shortNames: ['vminstancetype', 'vminstancetypes', 'vmf', 'vmfs'],
    version: 'v1beta1',
    versions: ONLY('v1beta1'),
    subresources: {},
  }),
  kind({
    group: 'instancetype.kubevirt.io',
    kind: 'VirtualMachineClusterInstancetype',
    shortNames: ['vmclusterinstancetype', 'vmclusterinstancetypes', 'vmcf', 'vmcfs'],
    namespaced: false,
    version: 'v1beta1',
    versions: ONLY('v1beta1'),
    subresources: {},
  }),
  kind({
    group: 'instancetype.kubevirt.io',
    kind: 'VirtualMachinePreference',
    shortNames: ['vmpref', 'vmprefs', 'vmp', 'vmps'],
    version: 'v1beta1',
    versions: ONLY('v1beta1'),
    subresources: {},
  }),
  kind({
    group: 'instancetype.kubevirt.io',
    kind: 'VirtualMachineClusterPreference',
    shortNames: ['vmcp', 'vmcps'],
    namespaced: false,
    version: 'v1beta1',
    versions: ONLY('v1beta1'),
    subresources: {},
  }),
  kind({
    group: 'migrations.kubevirt.io',
    kind: 'MigrationPolicy',
    plural: 'migrationpolicies',
    shortNames: [],
    namespaced: false,
    version: 'v1alpha1',
    versions: ONLY('v1alpha1'),
  }),
  kind({
    group: 'clone.kubevirt.io',
    kind: 'VirtualMachineClone',
    shortNames: ['vmclone', 'vmclones'],
    version: 'v1beta1',
    versions: oldAndStorage('v1alpha1', 'v1beta1'),
    printerColumns: [
      PHASE,
      { name: 'SourceVirtualMachine', type: 'string', jsonPath: '.spec.source.name' },
      { name: 'TargetVirtualMachine', type: 'string', jsonPath: '.spec.target.name' },
    ],
  }),
];
