/**
 * Well-known labels, annotations, finalizers and device resource names of the
 * `kubevirt.io` API, with upstream's values (staging/src/kubevirt.io/api/core/v1/types.go).
 */

/** Labels KubeVirt sets or reads on VMIs, launcher pods and nodes. */
export const Labels = {
  /** `kubevirt.io: virt-launcher` marks launcher pods. */
  app: 'kubevirt.io',
  /** UID of the VMI that created a launcher pod. */
  createdBy: 'kubevirt.io/created-by',
  /** The node a VMI runs on. */
  nodeName: 'kubevirt.io/nodeName',
  /** Node label telling whether VMIs may be scheduled there. */
  nodeSchedulable: 'kubevirt.io/schedulable',
  /** UID of the migration job a pod or VMI belongs to. */
  migrationJob: 'kubevirt.io/migrationJobUID',
  /** On a VMI whose launcher pod runs another image than the installed one. */
  outdatedLauncherImage: 'kubevirt.io/outdatedLauncherImage',
  /** Target node of an in-flight migration. */
  migrationTargetNodeName: 'kubevirt.io/migrationTargetNodeName',
  /** Selects the migrations of one VMI by its name. */
  migrationSelector: 'kubevirt.io/vmi-name',
  /** Operator install strategy marker. */
  installStrategy: 'kubevirt.io/install-strategy',
  /** Name of the VirtualMachine owning a VMI (set on the VMI). */
  virtualMachineName: 'vm.kubevirt.io/name',
  /** Label conventionally used by VM templates in upstream's examples. */
  vm: 'kubevirt.io/vm',
  /** Node capability labels for confidential computing. */
  sev: 'kubevirt.io/sev',
  sevES: 'kubevirt.io/sev-es',
  sevSNP: 'kubevirt.io/sev-snp',
  /** Node label for hosts tuned for realtime guests. */
  realtime: 'kubevirt.io/realtime',
  /** Node label prefixes of the node labeller. */
  cpuModelPrefix: 'cpu-model.node.kubevirt.io/',
  hostModelCPUPrefix: 'host-model-cpu.node.kubevirt.io/',
  cpuFeaturePrefix: 'cpu-feature.node.kubevirt.io/',
} as const;

/** Labels a user may not set on a VMI: only KubeVirt's service accounts set them. */
export const RestrictedVMILabels: readonly string[] = [
  Labels.createdBy,
  Labels.migrationJob,
  Labels.nodeName,
  Labels.migrationTargetNodeName,
  Labels.nodeSchedulable,
  Labels.installStrategy,
];

/** Annotations KubeVirt sets or reads. */
export const Annotations = {
  /** Name of the libvirt domain, set on the launcher pod. */
  domain: 'kubevirt.io/domain',
  /** JSON list of hook sidecars (needs the `Sidecar` feature gate). */
  hookSidecars: 'hooks.kubevirt.io/hookSidecars',
  /** Ignition data (needs the `ExperimentalIgnitionSupport` feature gate). */
  ignitionData: 'kubevirt.io/ignitiondata',
  /** Number of parallel QEMU migration threads. */
  multiThreadedQemuMigration: 'kubevirt.io/multiThreadedQemuMigration',
  /** Name of the migration job handling a VMI. */
  migrationJobName: 'kubevirt.io/migrationJobName',
  /** Generation of the VM a VMI was created from. */
  vmGeneration: 'kubevirt.io/vm-generation',
  /** Instance type and preference a VM was expanded with. */
  instancetypeName: 'kubevirt.io/instancetype-name',
  clusterInstancetypeName: 'kubevirt.io/cluster-instancetype-name',
  preferenceName: 'kubevirt.io/preference-name',
  clusterPreferenceName: 'kubevirt.io/cluster-preference-name',
  /** API version last observed and stored by the controllers. */
  latestObservedAPIVersion: 'kubevirt.io/latest-observed-api-version',
  storageObservedAPIVersion: 'kubevirt.io/storage-observed-api-version',
  /** Heartbeat timestamp virt-handler writes on its node. */
  virtHandlerHeartbeat: 'kubevirt.io/heartbeat',
  /** Keeps the launcher pod after the domain fails (debugging). */
  keepLauncherAfterFailure: 'kubevirt.io/keep-launcher-alive-after-failure',
  /** SMBIOS base board manufacturer override read by the example hook sidecar. */
  smbiosBaseBoardManufacturer: 'smbios.vm.kubevirt.io/baseBoardManufacturer',
} as const;

/** Finalizers KubeVirt adds. */
export const Finalizers = {
  /** Added to every VMI at admission; removed once its domain and pod are gone. */
  virtualMachineInstance: 'kubevirt.io/foregroundDeleteVirtualMachine',
  /** The pre-namespaced spelling older releases added; still honoured on removal. */
  deprecatedVirtualMachineInstance: 'foregroundDeleteVirtualMachine',
  /** Added by the VM controller to the VMs it manages. */
  virtualMachineController: 'kubevirt.io/virtualMachineControllerFinalize',
  /** Added to migration objects by the migration controller. */
  migration: 'kubevirt.io/migrationJobFinalize',
} as const;

/** Device plugin resource names a launcher pod requests. */
export const DeviceResources = {
  kvm: 'devices.kubevirt.io/kvm',
  tun: 'devices.kubevirt.io/tun',
  vhostNet: 'devices.kubevirt.io/vhost-net',
  sev: 'devices.kubevirt.io/sev',
} as const;
