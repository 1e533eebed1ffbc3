/**
 * A pure-TypeScript client of libvirt's RPC protocol over the daemon's unix socket
 * (no native addon). Start with `LibvirtClient.connect({ uri })`.
 */
export {
  AffectFlags,
  type ClientState,
  CoreDumpFormat,
  CreateFlags,
  DestroyFlags,
  type DomainEventKind,
  DomainXMLFlags,
  DumpFlags,
  LibvirtClient,
  type LibvirtClientOptions,
  ListDomainsFlags,
  MigrateFlags,
  type ReconnectOptions,
  UndefineFlags,
  VIR_CONNECT_RO,
} from './client';
export { ConsoleFlags, DomainConsole } from './console';
export * from './errors';
export { EventStream } from './events';
export { DEFAULT_KEEPALIVE, type KeepAliveOptions } from './keepalive';
export {
  type AgentLifecycleEventMsg,
  type BlockStats,
  type DeviceRemovedEventMsg,
  type DomainEvent,
  DomainEventId,
  type DomainInfo,
  type DomainJobInfo,
  DomainState,
  type DomainStateInfo,
  type DomainStatsRecord,
  type InterfaceStats,
  LifecycleEvent,
  type LifecycleEventMsg,
  type LifecycleEventName,
  lifecycleEventName,
  type MemoryStat,
  type NodeInfo,
  type RebootEventMsg,
} from './protocol/remote';
export {
  type DomainRef,
  type TypedParam,
  type TypedParamValue,
  tp,
  typedParamsToRecord,
} from './protocol/types';
export type { DomainScreenshot, ScreenshotOptions } from './screenshot';
export { DEFAULT_SOCKET_PATH } from './transport';
