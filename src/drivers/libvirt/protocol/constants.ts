/**
 * Numbers of libvirt's RPC protocol: programs, message types, limits and procedure
 * numbers, as declared in libvirt's src/rpc/virnetprotocol.x, src/rpc/virkeepaliveprotocol.x,
 * src/remote/remote_protocol.x and src/remote/qemu_protocol.x. They are wire ABI: libvirt
 * never renumbers them, so they are written out here for the procedures this client uses.
 */

/** virnetprotocol.x limits. */
export const VIR_NET_MESSAGE_INITIAL = 65536;
/** Maximum serialised message, excluding the 4-byte length word. */
export const VIR_NET_MESSAGE_MAX = 33554432;
export const VIR_NET_MESSAGE_HEADER_MAX = 24;
export const VIR_NET_MESSAGE_PAYLOAD_MAX = 33554408;
export const VIR_NET_MESSAGE_LEN_MAX = 4;
export const VIR_NET_MESSAGE_STRING_MAX = 4194304;

/** virNetMessageType. */
export const MessageType = {
  CALL: 0,
  REPLY: 1,
  MESSAGE: 2,
  STREAM: 3,
  CALL_WITH_FDS: 4,
  REPLY_WITH_FDS: 5,
  STREAM_HOLE: 6,
} as const;

/** virNetMessageStatus. */
export const MessageStatus = {
  OK: 0,
  ERROR: 1,
  CONTINUE: 2,
} as const;

/** virkeepaliveprotocol.x */
export const KEEPALIVE_PROGRAM = 0x6b656570;
export const KEEPALIVE_PROTOCOL_VERSION = 1;
export const KEEPALIVE_PROC_PING = 1;
export const KEEPALIVE_PROC_PONG = 2;

/** remote_protocol.x */
export const REMOTE_PROGRAM = 0x20008086;
export const REMOTE_PROTOCOL_VERSION = 1;

/** qemu_protocol.x */
export const QEMU_PROGRAM = 0x20008087;
export const QEMU_PROTOCOL_VERSION = 1;

/** remote_protocol.x size limits (recent libvirt values). */
export const REMOTE_STRING_MAX = 4194304;
export const REMOTE_DOMAIN_LIST_MAX = 16384;
export const REMOTE_MIGRATE_COOKIE_MAX = 4194304;
export const REMOTE_AUTH_TYPE_LIST_MAX = 20;
export const REMOTE_DOMAIN_MEMORY_STATS_MAX = 1024;
export const REMOTE_DOMAIN_MIGRATE_PARAM_LIST_MAX = 64;
export const REMOTE_CONNECT_GET_ALL_DOMAIN_STATS_MAX = 262144;
export const REMOTE_NODE_SEV_INFO_MAX = 64;
export const REMOTE_DOMAIN_LAUNCH_SECURITY_INFO_PARAMS_MAX = 64;
export const REMOTE_DOMAIN_LAUNCH_SECURITY_STATE_PARAMS_MAX = 64;
export const REMOTE_DOMAIN_JOB_STATS_MAX = 64;
export const REMOTE_DOMAIN_FSFREEZE_MOUNTPOINTS_MAX = 256;
export const VIR_UUID_BUFLEN = 16;

/** remote_auth_type */
export const REMOTE_AUTH_NONE = 0;
export const REMOTE_AUTH_SASL = 1;
export const REMOTE_AUTH_POLKIT = 2;

/** virDrvFeature values used with CONNECT_SUPPORTS_FEATURE (libvirt_internal.h). */
export const VIR_DRV_FEATURE_TYPED_PARAM_STRING = 9;
export const VIR_DRV_FEATURE_PROGRAM_KEEPALIVE = 10;

/** remote_procedure: the procedures this client calls or receives. */
export const RemoteProc = {
  CONNECT_OPEN: 1,
  CONNECT_CLOSE: 2,
  CONNECT_GET_TYPE: 3,
  CONNECT_GET_VERSION: 4,
  NODE_GET_INFO: 6,
  CONNECT_GET_CAPABILITIES: 7,
  DOMAIN_CREATE_XML: 10,
  DOMAIN_GET_XML_DESC: 14,
  DOMAIN_GET_INFO: 16,
  DOMAIN_LOOKUP_BY_ID: 22,
  DOMAIN_LOOKUP_BY_NAME: 23,
  DOMAIN_LOOKUP_BY_UUID: 24,
  DOMAIN_REBOOT: 27,
  DOMAIN_RESUME: 28,
  DOMAIN_SUSPEND: 34,
  CONNECT_GET_HOSTNAME: 59,
  CONNECT_SUPPORTS_FEATURE: 60,
  DOMAIN_BLOCK_STATS: 64,
  DOMAIN_INTERFACE_STATS: 65,
  AUTH_LIST: 66,
  CONNECT_GET_URI: 110,
  DOMAIN_IS_ACTIVE: 150,
  CONNECT_GET_LIB_VERSION: 157,
  DOMAIN_MEMORY_STATS: 159,
  DOMAIN_ATTACH_DEVICE_FLAGS: 160,
  DOMAIN_DETACH_DEVICE_FLAGS: 161,
  DOMAIN_GET_JOB_INFO: 163,
  DOMAIN_ABORT_JOB: 164,
  DOMAIN_UPDATE_DEVICE_FLAGS: 174,
  DOMAIN_CREATE_WITH_FLAGS: 196,
  DOMAIN_SET_VCPUS_FLAGS: 199,
  DOMAIN_OPEN_CONSOLE: 201,
  DOMAIN_SET_MEMORY_FLAGS: 204,
  DOMAIN_SCREENSHOT: 211,
  DOMAIN_GET_STATE: 212,
  DOMAIN_UNDEFINE_FLAGS: 231,
  DOMAIN_DESTROY_FLAGS: 234,
  DOMAIN_RESET: 245,
  DOMAIN_SHUTDOWN_FLAGS: 258,
  CONNECT_LIST_ALL_DOMAINS: 273,
  DOMAIN_GET_JOB_STATS: 298,
  DOMAIN_MIGRATE_PERFORM3_PARAMS: 305,
  CONNECT_DOMAIN_EVENT_CALLBACK_REGISTER_ANY: 316,
  CONNECT_DOMAIN_EVENT_CALLBACK_DEREGISTER_ANY: 317,
  DOMAIN_EVENT_CALLBACK_LIFECYCLE: 318,
  DOMAIN_EVENT_CALLBACK_REBOOT: 319,
  DOMAIN_EVENT_CALLBACK_DEVICE_REMOVED: 333,
  DOMAIN_CORE_DUMP_WITH_FORMAT: 334,
  DOMAIN_FSFREEZE: 335,
  DOMAIN_FSTHAW: 336,
  CONNECT_GET_DOMAIN_CAPABILITIES: 342,
  CONNECT_GET_ALL_DOMAIN_STATS: 344,
  DOMAIN_EVENT_CALLBACK_AGENT_LIFECYCLE: 348,
  DOMAIN_DEFINE_XML_FLAGS: 350,
  CONNECT_EVENT_CONNECTION_CLOSED: 362,
  NODE_GET_SEV_INFO: 395,
  DOMAIN_GET_LAUNCH_SECURITY_INFO: 396,
  DOMAIN_SET_LAUNCH_SECURITY_STATE: 439,
} as const;

/** qemu_procedure */
export const QemuProc = {
  DOMAIN_MONITOR_COMMAND: 1,
  DOMAIN_AGENT_COMMAND: 3,
} as const;
