/** Public entry of `kubevirt-ts/controllers`. */

export {
  LAUNCHER_COMMAND,
  LAUNCHER_DIRS,
  LAUNCHER_SUBCOMMAND,
  type LauncherArgs,
  LauncherArgsError,
  parseLauncherArgs,
  renderLauncherArgs,
} from './common/launcher-args';
export { MigrationLabels } from './common/migration-labels';
export type { Pod } from './common/pod';
export { parseQuantity, QuantityError } from './common/quantity';
export { VmiResource } from './common/vmi-resource';
/** Composition roots (inversify containers) of virt-launcher and of a node's virt-handler and pod runtime. */
export { createLauncherContainer, LauncherTokens } from './composition/launcher-container';
export { createNodeContainer, NodeTokens } from './composition/node-container';
export {
  KubeVirtConfigWatcher,
  type KubeVirtConfigWatcherOptions,
  pickKubeVirt,
} from './config/kubevirt-config';
/** The CSI driver csi.kubevirt-ts.io (docs/storage.md). */
export * as csi from './csi-driver/index';
/** The local pod runtime: runs launcher Pods as processes on nodes without a kubelet. */
export * as podruntime from './local/pod-runtime/index';
export { PvBinder, type PvBinderOptions } from './local/pv-binder';
export * from './runtime';
export { MigrationController } from './virt-controller/migration/controller';
export { MigrationPhase, nextMigrationStep } from './virt-controller/migration/phases';
export { PoolController, VirtualMachinePoolType } from './virt-controller/pool/controller';
export { ReplicaSetController } from './virt-controller/replicaset/controller';
export { memoryOverhead, type OverheadOptions } from './virt-controller/services/memory-overhead';
export {
  DeviceResources as LauncherDeviceResources,
  type LauncherPodOptions,
  launcherResources,
  PodRenderError,
  renderLauncherPod,
} from './virt-controller/services/pod-renderer';
export {
  LAUNCHER_POD_SELECTOR,
  VirtController,
  type VirtControllerOptions,
  type WriteRecord,
} from './virt-controller/virt-controller';
export { VM_GENERATION_ANNOTATION, VmController, VmEventReason } from './virt-controller/vm/controller';
export { PrintableStatus, printableStatus } from './virt-controller/vm/printable-status';
export {
  decideRunStrategy,
  effectiveRunStrategy,
  RunStrategy,
  RunStrategyError,
} from './virt-controller/vm/run-strategy';
export { nextStartFailure, startBackoffSeconds } from './virt-controller/vm/start-backoff';
export { VmiController, VmiEventReason } from './virt-controller/vmi/controller';
export { nextVmiStatus, VmiPhase } from './virt-controller/vmi/status';
/**
 * virt-handler, the node agent: drives the launchers of its node's VMIs, writes VMI status
 * from their reports, labels the node.
 */
export * as handler from './virt-handler/index';
/** virt-launcher (one process per VMI, serving the launcher protocol) and the handler-launcher contract. */
export * as launcher from './virt-launcher/index';
