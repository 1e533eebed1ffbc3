/**
 * Errors of the libvirt client. Everything the client rejects with is a `LibvirtError`
 * carrying libvirt's numeric `code`, `domain` and `level` (virterror.h), so callers branch
 * on `code` (for example `VIR_ERR_NO_DOMAIN`) whether the daemon reported the error or
 * the client detected it (bad frame, lost connection, unsupported auth).
 */

/** Error codes from libvirt's virErrorNumber (virterror.h); the values are wire ABI. */
export const VIR_ERR_OK = 0;
export const VIR_ERR_INTERNAL_ERROR = 1;
export const VIR_ERR_NO_MEMORY = 2;
export const VIR_ERR_NO_SUPPORT = 3;
export const VIR_ERR_NO_CONNECT = 5;
export const VIR_ERR_INVALID_CONN = 6;
export const VIR_ERR_INVALID_DOMAIN = 7;
export const VIR_ERR_INVALID_ARG = 8;
export const VIR_ERR_OPERATION_FAILED = 9;
export const VIR_ERR_XML_ERROR = 27;
export const VIR_ERR_DOM_EXIST = 28;
export const VIR_ERR_OPERATION_DENIED = 29;
export const VIR_ERR_XML_DETAIL = 35;
export const VIR_ERR_SYSTEM_ERROR = 38;
export const VIR_ERR_RPC = 39;
export const VIR_ERR_NO_DOMAIN = 42;
export const VIR_ERR_NO_NETWORK = 43;
export const VIR_ERR_AUTH_FAILED = 45;
export const VIR_ERR_OPERATION_INVALID = 55;
export const VIR_ERR_CONFIG_UNSUPPORTED = 67;
export const VIR_ERR_OPERATION_TIMEOUT = 68;
export const VIR_ERR_ARGUMENT_UNSUPPORTED = 74;
export const VIR_ERR_OPERATION_UNSUPPORTED = 84;
export const VIR_ERR_AGENT_UNRESPONSIVE = 86;

/** Error domains from libvirt's virErrorDomain (the subsystem that raised the error). */
export const VIR_FROM_NONE = 0;
export const VIR_FROM_RPC = 7;
export const VIR_FROM_QEMU = 10;
export const VIR_FROM_TEST = 12;
export const VIR_FROM_REMOTE = 13;

/** Error levels (virErrorLevel). */
export const VIR_ERR_NONE = 0;
export const VIR_ERR_WARNING = 1;
export const VIR_ERR_ERROR = 2;

/** Fields of an error as libvirt sends it (virNetMessageError / remote_error). */
export interface LibvirtErrorFields {
  code: number;
  domain: number;
  message: string;
  level: number;
  str1?: string | null;
  str2?: string | null;
  str3?: string | null;
  int1?: number;
  int2?: number;
}

/** An error reported by libvirt, or detected by the client, with libvirt's numeric code. */
export class LibvirtError extends Error {
  override name = 'LibvirtError';
  /** virErrorNumber, e.g. 42 (`VIR_ERR_NO_DOMAIN`). */
  readonly code: number;
  /** virErrorDomain: the subsystem that raised it. */
  readonly domain: number;
  /** virErrorLevel. */
  readonly level: number;
  readonly str1: string | null;
  readonly str2: string | null;
  readonly str3: string | null;
  readonly int1: number;
  readonly int2: number;

  constructor(fields: LibvirtErrorFields, options?: { cause?: unknown }) {
    super(fields.message, options);
    this.code = fields.code;
    this.domain = fields.domain;
    this.level = fields.level;
    this.str1 = fields.str1 ?? null;
    this.str2 = fields.str2 ?? null;
    this.str3 = fields.str3 ?? null;
    this.int1 = fields.int1 ?? 0;
    this.int2 = fields.int2 ?? 0;
  }
}

/** A malformed or unexpected message on the wire (bad length, truncated payload, ...). */
export class LibvirtProtocolError extends LibvirtError {
  override name = 'LibvirtProtocolError';
  constructor(message: string) {
    super({ code: VIR_ERR_RPC, domain: VIR_FROM_RPC, level: VIR_ERR_ERROR, message });
  }
}

/**
 * The connection to the daemon failed, closed or stopped answering. Calls in flight when
 * it happens reject with this error; `reason` says which.
 */
export class LibvirtConnectionError extends LibvirtError {
  override name = 'LibvirtConnectionError';
  constructor(
    readonly reason: 'connect-failed' | 'closed' | 'keepalive-timeout' | 'client-closed' | 'reconnecting',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(
      {
        code: reason === 'client-closed' ? VIR_ERR_INVALID_CONN : VIR_ERR_SYSTEM_ERROR,
        domain: VIR_FROM_RPC,
        level: VIR_ERR_ERROR,
        message,
      },
      options,
    );
  }
}

/** True when `err` is a `LibvirtError` with the given code. */
export function isLibvirtError(err: unknown, code?: number): err is LibvirtError {
  return err instanceof LibvirtError && (code === undefined || err.code === code);
}
