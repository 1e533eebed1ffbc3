/**
 * virt-launcher: one process per VMI, serving the launcher protocol over its pod's sockets.
 * The package's `launcher` namespace also re-exports the parts of the handler-launcher
 * contract (launcher-protocol/) and the shared helpers (common/) it always exported.
 */
export * from '../common/path-map';
export * from '../common/socket-proxy';
export * from '../launcher-protocol/domain-report';
export * from '../launcher-protocol/guest-agent-report';
export {
  CONSOLE_SOCKET,
  MIGRATION_TARGET_XML,
  NOTIFY_PIPE_SOCKET,
  VNC_SOCKET,
} from '../launcher-protocol/paths';
export * from '../launcher-protocol/short-dir';
export * from './console-relay';
export * from './drivers';
export * from './guest-agent-poller';
export * from './image-dirs';
export * from './launcher';
export * from './launcher-paths';
export * from './main';
export * from './volume-prep';
