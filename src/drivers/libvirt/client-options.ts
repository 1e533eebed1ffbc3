/** What callers pass to `LibvirtClient`: connection options and the flag sets of its calls. */
import type { KeepAliveOptions } from './keepalive';

/** Reconnection policy after the connection to the daemon is lost. */
export interface ReconnectOptions {
  /** First delay before retrying, in ms (default 100). Doubles per attempt. */
  initialDelayMs?: number;
  /** Largest delay between attempts, in ms (default 5000). */
  maxDelayMs?: number;
  /** Attempts before giving up; the client then fails every call clearly (default 20). */
  maxAttempts?: number;
}

/** Options of `LibvirtClient.connect`. */
export interface LibvirtClientOptions {
  /** Connection URI to open through the daemon (default `qemu:///system`). */
  uri?: string;
  /** Daemon socket (default `/var/run/libvirt/libvirt-sock`). */
  socketPath?: string;
  /** Open read-only (VIR_CONNECT_RO). */
  readOnly?: boolean;
  /** Connect timeout per attempt, in ms (default 10 s). */
  connectTimeoutMs?: number;
  /** Keepalive probing (default 5 s x 5, as libvirt); `false` disables client probes. */
  keepalive?: KeepAliveOptions | false;
  /** Reconnect with backoff when the daemon goes away (default: off, calls then fail). */
  reconnect?: ReconnectOptions | boolean;
  /**
   * Longest wait for one call's reply, in ms (default 5 min; 0: none). A migration waits
   * without limit (it returns when the migration ends); an agent command waits its own
   * timeout plus this.
   */
  callTimeoutMs?: number;
}

/** Connection state reported to `onStateChange`. */
export type ClientState = 'open' | 'reconnecting' | 'closed';

/** `virConnectOpen` flags. */
export const VIR_CONNECT_RO = 1;

/** Flags of `domainGetXMLDesc`. */
export const DomainXMLFlags = { SECURE: 1, INACTIVE: 2, UPDATE_CPU: 4, MIGRATABLE: 8 } as const;

/** Flags of `listAllDomains`. */
export const ListDomainsFlags = {
  ACTIVE: 1,
  INACTIVE: 2,
  PERSISTENT: 4,
  TRANSIENT: 8,
  RUNNING: 16,
  PAUSED: 32,
  SHUTOFF: 64,
} as const;

/** Flags of `domainUndefine`. */
export const UndefineFlags = {
  MANAGED_SAVE: 1,
  SNAPSHOTS_METADATA: 2,
  NVRAM: 4,
  KEEP_NVRAM: 8,
  CHECKPOINTS_METADATA: 16,
} as const;

/** Flags of `domainCreate` / `domainCreateXML`. */
export const CreateFlags = {
  START_PAUSED: 1,
  START_AUTODESTROY: 2,
  START_BYPASS_CACHE: 4,
  START_FORCE_BOOT: 8,
  START_VALIDATE: 16,
} as const;

/** Flags of `domainDestroy`. */
export const DestroyFlags = { DEFAULT: 0, GRACEFUL: 1 } as const;

/** virDomainCoreDumpFlags (`domainCoreDumpWithFormat`). */
export const DumpFlags = {
  CRASH: 1,
  LIVE: 2,
  BYPASS_CACHE: 4,
  RESET: 8,
  MEMORY_ONLY: 16,
} as const;

/** virDomainCoreDumpFormat: raw is an ELF core (the only format with MEMORY_ONLY and no compression). */
export const CoreDumpFormat = { RAW: 0, KDUMP_ZLIB: 1, KDUMP_LZO: 2, KDUMP_SNAPPY: 3, WIN_DMP: 4 } as const;

/** virDomainModificationImpact for device, memory and vcpu changes. */
export const AffectFlags = { CURRENT: 0, LIVE: 1, CONFIG: 2 } as const;

/** Flags of `domainMigrate` (virDomainMigrateFlags, the ones commonly used). */
export const MigrateFlags = {
  LIVE: 1,
  PEER2PEER: 2,
  TUNNELLED: 4,
  PERSIST_DEST: 8,
  UNDEFINE_SOURCE: 16,
  PAUSED: 32,
  NON_SHARED_DISK: 64,
  NON_SHARED_INC: 128,
  AUTO_CONVERGE: 8192,
  POSTCOPY: 32768,
} as const;
