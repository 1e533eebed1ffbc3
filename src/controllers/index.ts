/** Public entry of `kubevirt-ts/controllers`. */

/** The node side: virt-handler, virt-launcher, the local pod runtime, and their composition. */
export { createLauncherContainer, LauncherTokens } from './composition/launcher-container';
export { createNodeContainer, NodeTokens } from './composition/node-container';
export {
  KubeVirtConfigWatcher,
  type KubeVirtConfigWatcherOptions,
  pickKubeVirt,
} from './config/kubevirt-config';
export * as handler from './handler/index';
export * as launcher from './launcher/index';
export { MigrationController, MigrationLabels } from './migration/controller';
export { MigrationPhase, nextMigrationStep } from './migration/phases';
export * as podruntime from './podruntime/index';
export { PoolController, VirtualMachinePoolType } from './pool/controller';
export { ReplicaSetController } from './replicaset/controller';
export * from './runtime';
export {
  LAUNCHER_COMMAND,
  LAUNCHER_DIRS,
  LAUNCHER_SUBCOMMAND,
  type LauncherArgs,
  LauncherArgsError,
  parseLauncherArgs,
  renderLauncherArgs,
} from './services/launcher-args';
export { memoryOverhead, type OverheadOptions } from './services/memory-overhead';
export type { Pod } from './services/pod';
export {
  DeviceResources as LauncherDeviceResources,
  type LauncherPodOptions,
  launcherResources,
  PodRenderError,
  renderLauncherPod,
} from './services/pod-renderer';
export { parseQuantity, QuantityError } from './services/quantity';
export { PvBinder, type PvBinderOptions } from './storage/pv-binder';
export {
  LAUNCHER_POD_SELECTOR,
  VirtController,
  type VirtControllerOptions,
  type WriteRecord,
} from './virt-controller';
export { VM_GENERATION_ANNOTATION, VmController, VmEventReason } from './vm/controller';
export { PrintableStatus, printableStatus } from './vm/printable-status';
export { decideRunStrategy, effectiveRunStrategy, RunStrategy, RunStrategyError } from './vm/run-strategy';
export { nextStartFailure, startBackoffSeconds } from './vm/start-backoff';
export { VmiController, VmiEventReason, VmiResource } from './vmi/controller';
export { nextVmiStatus, VmiPhase } from './vmi/status';
