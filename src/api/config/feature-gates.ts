/**
 * KubeVirt's feature gates: names exactly as upstream's constants
 * (pkg/virt-config/featuregate) with their maturity, and the rule deciding whether a gate
 * is on for a given `developerConfiguration`.
 */
import type { DeveloperConfiguration } from '../generated/types';

/** Maturity of a gate, as upstream's `featuregate.State`. */
export type FeatureGateState = 'Alpha' | 'Beta' | 'GA' | 'Deprecated' | 'Discontinued';

/** Feature gate names, as they are written in `developerConfiguration.featureGates`. */
export const FeatureGate = {
  // Alpha: off unless listed.
  CPUManager: 'CPUManager',
  Ignition: 'ExperimentalIgnitionSupport',
  HypervStrictCheck: 'HypervStrictCheck',
  Sidecar: 'Sidecar',
  HostDevices: 'HostDevices',
  HostDisk: 'HostDisk',
  DownwardMetrics: 'DownwardMetrics',
  Root: 'Root',
  WorkloadEncryptionSEV: 'WorkloadEncryptionSEV',
  WorkloadEncryptionTDX: 'WorkloadEncryptionTDX',
  VSOCK: 'VSOCK',
  AlignCPUs: 'AlignCPUs',
  VirtIOFSStorageVolumes: 'EnableVirtioFsStorageVolumes',
  GPUsWithDRA: 'GPUsWithDRA',
  HostDevicesWithDRA: 'HostDevicesWithDRA',
  NetworkDevicesWithDRA: 'NetworkDevicesWithDRA',
  DecentralizedLiveMigration: 'DecentralizedLiveMigration',
  UtilityVolumes: 'UtilityVolumes',
  IncrementalBackup: 'IncrementalBackup',
  ObjectGraph: 'ObjectGraph',
  CrossArchitectureVirtualization: 'CrossArchitectureVirtualization',
  PortRangesSpec: 'PortRangesSpec',
  ContainerPathVolumes: 'ContainerPathVolumes',
  RebootPolicy: 'RebootPolicy',
  // Beta: on unless listed in `disabledFeatureGates`.
  ImageVolume: 'ImageVolume',
  Snapshot: 'Snapshot',
  KubevirtSeccompProfile: 'KubevirtSeccompProfile',
  NodeRestriction: 'NodeRestriction',
  DeclarativeHotplugVolumes: 'DeclarativeHotplugVolumes',
  PasstBinding: 'PasstBinding',
  // GA: always on.
  LiveMigration: 'LiveMigration',
  SRIOVLiveMigration: 'SRIOVLiveMigration',
  NonRoot: 'NonRoot',
  PSA: 'PSA',
  CPUNodeDiscovery: 'CPUNodeDiscovery',
  NUMA: 'NUMA',
  GPU: 'GPU',
  CommonInstancetypesDeployment: 'CommonInstancetypesDeploymentGate',
  HotplugNICs: 'HotplugNICs',
  BochsDisplayForEFIGuests: 'BochsDisplayForEFIGuests',
  VMLiveUpdateFeatures: 'VMLiveUpdateFeatures',
  NetworkBindingPlugins: 'NetworkBindingPlugins',
  DynamicPodInterfaceNaming: 'DynamicPodInterfaceNaming',
  VolumesUpdateStrategy: 'VolumesUpdateStrategy',
  VolumeMigration: 'VolumeMigration',
  DisableCustomSELinuxPolicy: 'DisableCustomSELinuxPolicy',
  AutoResourceLimits: 'AutoResourceLimitsGate',
  ClusterProfiler: 'ClusterProfiler',
  VMPersistentState: 'VMPersistentState',
  VMExport: 'VMExport',
  PersistentReservation: 'PersistentReservation',
  InstancetypeReferencePolicy: 'InstancetypeReferencePolicy',
  VirtIOFSConfigVolumes: 'EnableVirtioFsConfigVolumes',
  ExpandDisks: 'ExpandDisks',
  PanicDevices: 'PanicDevices',
  LiveUpdateNADRef: 'LiveUpdateNADRef',
  VideoConfig: 'VideoConfig',
  SecureExecution: 'SecureExecution',
  MigrationPriorityQueue: 'MigrationPriorityQueue',
  // Deprecated: still honoured when listed.
  DockerSELinuxMCSWorkaround: 'DockerSELinuxMCSWorkaround',
  MultiArchitecture: 'MultiArchitecture',
  DisableMediatedDevicesHandling: 'DisableMDEVConfiguration',
  HotplugVolumes: 'HotplugVolumes',
  // Discontinued: never on.
  VirtIOFS: 'ExperimentalVirtiofsSupport',
  Passt: 'Passt',
  Macvtap: 'Macvtap',
  PasstIPStackMigration: 'PasstIPStackMigration',
} as const;

/** A feature gate name (any string is accepted by the API; these are the known ones). */
export type FeatureGateName = (typeof FeatureGate)[keyof typeof FeatureGate];

const alpha: FeatureGateName[] = [
  FeatureGate.CPUManager,
  FeatureGate.Ignition,
  FeatureGate.HypervStrictCheck,
  FeatureGate.Sidecar,
  FeatureGate.HostDevices,
  FeatureGate.HostDisk,
  FeatureGate.DownwardMetrics,
  FeatureGate.Root,
  FeatureGate.WorkloadEncryptionSEV,
  FeatureGate.WorkloadEncryptionTDX,
  FeatureGate.VSOCK,
  FeatureGate.AlignCPUs,
  FeatureGate.VirtIOFSStorageVolumes,
  FeatureGate.GPUsWithDRA,
  FeatureGate.HostDevicesWithDRA,
  FeatureGate.NetworkDevicesWithDRA,
  FeatureGate.DecentralizedLiveMigration,
  FeatureGate.UtilityVolumes,
  FeatureGate.IncrementalBackup,
  FeatureGate.ObjectGraph,
  FeatureGate.CrossArchitectureVirtualization,
  FeatureGate.PortRangesSpec,
  FeatureGate.ContainerPathVolumes,
  FeatureGate.RebootPolicy,
];
const beta: FeatureGateName[] = [
  FeatureGate.ImageVolume,
  FeatureGate.Snapshot,
  FeatureGate.KubevirtSeccompProfile,
  FeatureGate.NodeRestriction,
  FeatureGate.DeclarativeHotplugVolumes,
  FeatureGate.PasstBinding,
];
const deprecated: FeatureGateName[] = [
  FeatureGate.DockerSELinuxMCSWorkaround,
  FeatureGate.MultiArchitecture,
  FeatureGate.DisableMediatedDevicesHandling,
  FeatureGate.HotplugVolumes,
];
const discontinued: FeatureGateName[] = [
  FeatureGate.VirtIOFS,
  FeatureGate.Passt,
  FeatureGate.Macvtap,
  FeatureGate.PasstIPStackMigration,
];

/** Maturity of every known gate. */
export const featureGateStates: ReadonlyMap<string, FeatureGateState> = (() => {
  const m = new Map<string, FeatureGateState>();
  for (const name of Object.values(FeatureGate)) m.set(name, 'GA');
  for (const n of alpha) m.set(n, 'Alpha');
  for (const n of beta) m.set(n, 'Beta');
  for (const n of deprecated) m.set(n, 'Deprecated');
  for (const n of discontinued) m.set(n, 'Discontinued');
  return m;
})();

/**
 * Whether a gate is on: GA gates always, Beta gates unless disabled, Alpha and Deprecated
 * gates only when listed in `featureGates` (and not disabled), Discontinued gates never.
 * Unknown names behave like Alpha gates.
 */
export function isFeatureGateEnabled(name: string, dev: DeveloperConfiguration | undefined): boolean {
  const disabled = dev?.disabledFeatureGates ?? [];
  if (disabled.includes(name)) return featureGateStates.get(name) === 'GA';
  switch (featureGateStates.get(name)) {
    case 'GA':
      return true;
    case 'Discontinued':
      return false;
    case 'Beta':
      return true;
    default:
      return (dev?.featureGates ?? []).includes(name);
  }
}

/** Listed gate names upstream does not know (the CLI warns about them). */
export function unknownFeatureGates(names: readonly string[]): string[] {
  return names.filter((n) => !featureGateStates.has(n));
}
