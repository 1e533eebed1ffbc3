/**
 * The handler-launcher protocol (`kubevirt.cmd.v1`, `kubevirt.notify.v1`,
 * `kubevirt.cmd.info`): gRPC over unix sockets, with upstream KubeVirt's RPC names.
 */
export * from './client';
export type {
  ExecRequest,
  FreezeRequest,
  GuestPingRequest,
  InjectLaunchSecretRequest,
  MemoryDumpRequest,
  MigrationRequest,
  VirtualMachineOptions,
  VMIRequest,
} from './generated/kubevirt/cmd/v1/cmd';
export * from './notify';
export * from './paths';
export * from './rpc-error';
export * from './server';
