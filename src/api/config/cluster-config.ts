/**
 * The cluster configuration the rest of the system reads: the KubeVirt CR's
 * `spec.configuration` merged over upstream's defaults (pkg/virt-config), with accessors
 * for the values admission, the controllers and the drivers need.
 */
import type { KubeVirt, KubeVirtConfiguration, MigrationConfiguration, Quantity } from '../generated/types';
import { isFeatureGateEnabled } from './feature-gates';

/** Upstream's default values (pkg/virt-config/virt-config.go). */
export const ConfigDefaults = {
  amd64MachineType: 'q35',
  arm64MachineType: 'virt',
  ppc64leMachineType: 'pseries',
  s390xMachineType: 's390-ccw-virtio',
  amd64EmulatedMachines: ['q35*', 'pc-q35*'],
  arm64EmulatedMachines: ['virt*'],
  ppc64leEmulatedMachines: ['pseries*'],
  s390xEmulatedMachines: ['s390-ccw-virtio*'],
  ovmfPath: '/usr/share/OVMF',
  arm64OvmfPath: '/usr/share/AAVMF',
  cpuRequest: '100m',
  memoryOvercommit: 100,
  cpuAllocationRatio: 10,
  networkInterface: 'bridge',
  permitBridgeInterfaceOnPodNetwork: true,
  permitSlirpInterface: false,
  imagePullPolicy: 'IfNotPresent',
  memBalloonStatsPeriod: 10,
  maxHotplugRatio: 4,
  vmRolloutStrategy: 'LiveUpdate',
  parallelMigrationsPerCluster: 5,
  parallelOutboundMigrationsPerNode: 2,
  bandwidthPerMigration: '0Mi',
  migrationProgressTimeout: 150,
  migrationCompletionTimeoutPerGiB: 150,
  lessPVCSpaceToleration: 10,
  minimumReservePVCBytes: 131072,
  supportedGuestAgentVersions: ['2.*', '3.*', '4.*', '5.*'],
} as const;

/** The architecture names KubeVirt uses (Go's GOARCH). */
export type Architecture = 'amd64' | 'arm64' | 's390x' | 'ppc64le';

/** Maps Node's `process.arch` to KubeVirt's architecture name; amd64 where unknown. */
export function hostArchitecture(): Architecture {
  const arch = typeof process !== 'undefined' ? process.arch : 'x64';
  switch (arch) {
    case 'arm64':
      return 'arm64';
    case 's390x':
      return 's390x';
    case 'ppc64':
      return 'ppc64le';
    default:
      return 'amd64';
  }
}

/** Upstream's default `KubeVirtConfiguration` for a cluster whose control plane runs on `arch`. */
export function defaultKubeVirtConfiguration(arch: string = hostArchitecture()): KubeVirtConfiguration {
  const d = ConfigDefaults;
  return {
    cpuRequest: d.cpuRequest,
    imagePullPolicy: d.imagePullPolicy,
    memBalloonStatsPeriod: d.memBalloonStatsPeriod,
    vmRolloutStrategy: d.vmRolloutStrategy,
    supportedGuestAgentVersions: [...d.supportedGuestAgentVersions],
    architectureConfiguration: {
      defaultArchitecture: arch,
      amd64: {
        machineType: d.amd64MachineType,
        emulatedMachines: [...d.amd64EmulatedMachines],
        ovmfPath: d.ovmfPath,
      },
      arm64: {
        machineType: d.arm64MachineType,
        emulatedMachines: [...d.arm64EmulatedMachines],
        ovmfPath: d.arm64OvmfPath,
      },
      ppc64le: {
        machineType: d.ppc64leMachineType,
        emulatedMachines: [...d.ppc64leEmulatedMachines],
        ovmfPath: d.ovmfPath,
      },
      s390x: { machineType: d.s390xMachineType, emulatedMachines: [...d.s390xEmulatedMachines] },
    },
    developerConfiguration: {
      featureGates: [],
      memoryOvercommit: d.memoryOvercommit,
      cpuAllocationRatio: d.cpuAllocationRatio,
      pvcTolerateLessSpaceUpToPercent: d.lessPVCSpaceToleration,
      minimumReservePVCBytes: d.minimumReservePVCBytes,
      nodeSelectors: {},
      useEmulation: false,
    },
    network: {
      defaultNetworkInterface: d.networkInterface,
      permitBridgeInterfaceOnPodNetwork: d.permitBridgeInterfaceOnPodNetwork,
      permitSlirpInterface: d.permitSlirpInterface,
    },
    migrations: {
      parallelMigrationsPerCluster: d.parallelMigrationsPerCluster,
      parallelOutboundMigrationsPerNode: d.parallelOutboundMigrationsPerNode,
      bandwidthPerMigration: d.bandwidthPerMigration,
      progressTimeout: d.migrationProgressTimeout,
      completionTimeoutPerGiB: d.migrationCompletionTimeoutPerGiB,
      allowAutoConverge: false,
      allowPostCopy: false,
      unsafeMigrationOverride: false,
    },
    liveUpdateConfiguration: { maxHotplugRatio: d.maxHotplugRatio },
    smbios: { family: 'KubeVirt', manufacturer: 'KubeVirt', product: 'None' },
  };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep merge like Go's json.Unmarshal onto a defaulted struct: objects merge, everything else replaces. */
function mergeOver<T>(base: T, override: unknown): T {
  if (!isPlainObject(base) || !isPlainObject(override)) return structuredClone(override as T);
  const out: Record<string, unknown> = { ...base };
  for (const [k, v] of Object.entries(override)) {
    if (v === undefined) continue;
    out[k] = k in out ? mergeOver(out[k], v) : structuredClone(v);
  }
  return out as T;
}

/**
 * `override` laid over `base` the way a KubeVirt CR's configuration is laid over the
 * defaults: objects merged field by field, anything else (lists included) replaced.
 */
export function mergeConfiguration(
  base: KubeVirtConfiguration | undefined,
  override: KubeVirtConfiguration | undefined,
): KubeVirtConfiguration {
  return mergeOver(base ?? {}, override ?? {});
}

/** The typed, defaulted cluster configuration. Immutable; build a new one to change it. */
export interface ClusterConfig {
  /** `spec.configuration` merged over upstream's defaults. */
  readonly configuration: Readonly<KubeVirtConfiguration>;
  /** Whether a feature gate is on (GA always, Beta unless disabled, others when listed). */
  isFeatureGateEnabled(name: string): boolean;
  /** The architecture assumed for VMIs that name none. */
  readonly defaultArchitecture: string;
  /** Default machine type for an architecture (`q35` on amd64). */
  machineType(arch?: string): string;
  /** Allowed machine type patterns for an architecture (`q35*`, `pc-q35*` on amd64). */
  emulatedMachines(arch?: string): string[];
  /** Firmware directory for an architecture. */
  ovmfPath(arch?: string): string;
  /** Cluster-wide CPU model, `''` when unset (VMIs then get `host-model`). */
  readonly cpuModel: string;
  /** CPU request given to VMIs that set none. */
  readonly cpuRequest: Quantity;
  /** Memory overcommit percent (100 = none). */
  readonly memoryOvercommit: number;
  /** vCPUs per physical CPU when computing pod CPU requests. */
  readonly cpuAllocationRatio: number;
  /** Whether software emulation is allowed when KVM is missing. */
  readonly useEmulation: boolean;
  /** Binding of the interface added to VMIs that define no network (`bridge`). */
  readonly defaultNetworkInterface: string;
  readonly permitBridgeInterfaceOnPodNetwork: boolean;
  readonly permitSlirpInterface: boolean;
  /** Cluster-wide eviction strategy, if any. */
  readonly evictionStrategy: string | undefined;
  /** `LiveUpdate` (upstream's default: CPU and memory hotplug headroom) or `Stage`. */
  readonly vmRolloutStrategy: string;
  readonly maxHotplugRatio: number;
  readonly maximumCpuSockets: number;
  readonly maximumGuestMemory: Quantity | undefined;
  readonly migrations: Readonly<MigrationConfiguration>;
}

/** Options for {@link createClusterConfig}. */
export interface ClusterConfigOptions {
  /** Control-plane architecture, the default for `defaultArchitecture` (host architecture if omitted). */
  hostArchitecture?: string;
  /** Extra feature gates to enable on top of the configuration's list. */
  featureGates?: readonly string[];
}

/** Builds the typed cluster configuration from a `KubeVirtConfiguration` (or none: all defaults). */
export function createClusterConfig(
  configuration: KubeVirtConfiguration = {},
  options: ClusterConfigOptions = {},
): ClusterConfig {
  const merged = mergeOver(defaultKubeVirtConfiguration(options.hostArchitecture), configuration);
  if (options.featureGates?.length) {
    const dev = merged.developerConfiguration ?? {};
    const gates = new Set([...(dev.featureGates ?? []), ...options.featureGates]);
    merged.developerConfiguration = { ...dev, featureGates: [...gates] };
  }
  const cfg = merged;
  const arch = (a?: string) => a || cfg.architectureConfiguration?.defaultArchitecture || 'amd64';
  const archCfg = (a?: string) => {
    const ac = cfg.architectureConfiguration ?? {};
    switch (arch(a)) {
      case 'arm64':
        return ac.arm64;
      case 'ppc64le':
        return ac.ppc64le;
      case 's390x':
        return ac.s390x;
      default:
        return ac.amd64;
    }
  };
  return Object.freeze({
    configuration: cfg,
    isFeatureGateEnabled: (name: string) => isFeatureGateEnabled(name, cfg.developerConfiguration),
    defaultArchitecture: arch(),
    machineType: (a?: string) =>
      cfg.machineType || archCfg(a)?.machineType || ConfigDefaults.amd64MachineType,
    emulatedMachines: (a?: string) => [...(cfg.emulatedMachines ?? archCfg(a)?.emulatedMachines ?? [])],
    ovmfPath: (a?: string) => cfg.ovmfPath || archCfg(a)?.ovmfPath || '',
    cpuModel: cfg.cpuModel ?? '',
    cpuRequest: cfg.cpuRequest ?? ConfigDefaults.cpuRequest,
    memoryOvercommit: cfg.developerConfiguration?.memoryOvercommit ?? ConfigDefaults.memoryOvercommit,
    cpuAllocationRatio: cfg.developerConfiguration?.cpuAllocationRatio ?? ConfigDefaults.cpuAllocationRatio,
    useEmulation: cfg.developerConfiguration?.useEmulation ?? false,
    defaultNetworkInterface: cfg.network?.defaultNetworkInterface ?? ConfigDefaults.networkInterface,
    permitBridgeInterfaceOnPodNetwork:
      cfg.network?.permitBridgeInterfaceOnPodNetwork ?? ConfigDefaults.permitBridgeInterfaceOnPodNetwork,
    permitSlirpInterface: cfg.network?.permitSlirpInterface ?? false,
    evictionStrategy: cfg.evictionStrategy,
    vmRolloutStrategy: cfg.vmRolloutStrategy ?? ConfigDefaults.vmRolloutStrategy,
    maxHotplugRatio: cfg.liveUpdateConfiguration?.maxHotplugRatio ?? 1,
    maximumCpuSockets: cfg.liveUpdateConfiguration?.maxCpuSockets ?? 0,
    maximumGuestMemory: cfg.liveUpdateConfiguration?.maxGuest,
    migrations: cfg.migrations ?? {},
  });
}

/** Builds the cluster configuration from a KubeVirt CR (its `spec.configuration`). */
export function clusterConfigFromKubeVirt(kv: KubeVirt, options: ClusterConfigOptions = {}): ClusterConfig {
  return createClusterConfig(kv.spec?.configuration ?? {}, options);
}
