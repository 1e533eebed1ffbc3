/**
 * What the project knows about a kind of the KubeVirt API groups (its names, scope,
 * versions, subresources, printer columns), and the kind -> TypeScript type map. The table
 * itself is ./kind-table; lookups are in ./groups.
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
