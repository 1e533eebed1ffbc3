/** Public entry of `kubevirt-ts/controllers`. */

export { MigrationController, MigrationLabels } from './migration/controller';
export { MigrationPhase, nextMigrationStep } from './migration/phases';
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
