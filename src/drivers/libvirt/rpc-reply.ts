/**
 * What the RPC transport (./transport) makes of the messages it receives for a call: the
 * checks a reply must pass (the call's program, version and procedure; status OK or
 * ERROR), the daemon's error in an ERROR reply, the reply's payload, and a stream packet
 * routed to its handler. Also the errors a call fails with before any reply.
 */
import {
  LibvirtError,
  LibvirtProtocolError,
  VIR_ERR_ERROR,
  VIR_ERR_INVALID_ARG,
  VIR_ERR_OPERATION_TIMEOUT,
  VIR_FROM_RPC,
} from './errors';
import { MessageStatus } from './protocol/constants';
import type { Message } from './protocol/packet';
import { decodeError } from './protocol/types';
import { XdrReader } from './xdr';

/** Handlers for stream packets (type STREAM) of one call serial. */
export interface StreamHandler {
  /** Called with the serial of the call that opens the stream, before it is sent. */
  onOpen?(serial: number): void;
  onData(data: Buffer): void;
  onEnd(): void;
  onError(err: LibvirtError): void;
}

/** What a call was: the reply must name the same program, version and procedure. */
export interface CallId {
  program: number;
  version: number;
  procedure: number;
  /** The call's name in error messages. */
  name: string;
}

function rpcError(code: number, message: string): LibvirtError {
  return new LibvirtError({ code, domain: VIR_FROM_RPC, level: VIR_ERR_ERROR, message });
}

/** VIR_ERR_INVALID_ARG for arguments that do not fit their wire types, naming the call. */
export function invalidArgument(call: CallId, cause: Error): LibvirtError {
  return rpcError(VIR_ERR_INVALID_ARG, `${call.name}: invalid argument: ${cause.message}`);
}

/** VIR_ERR_OPERATION_TIMEOUT for a call without its reply in time. */
export function callTimedOut(call: CallId, socketPath: string, timeoutMs: number): LibvirtError {
  return rpcError(
    VIR_ERR_OPERATION_TIMEOUT,
    `${call.name}: no reply from libvirt at ${socketPath} within ${timeoutMs} ms`,
  );
}

/**
 * Throws unless `reply` answers `call` with status OK: `LibvirtProtocolError` for another
 * program, version or procedure or an unknown status, the daemon's `LibvirtError` for ERROR.
 */
export function checkReply(reply: Message, call: CallId): void {
  const h = reply.header;
  const { program, version, procedure, name } = call;
  if (h.program !== program || h.version !== version || h.procedure !== procedure) {
    throw new LibvirtProtocolError(
      `${name}: unexpected reply (program ${h.program} version ${h.version} procedure ${h.procedure}) to a call of program ${program} version ${version} procedure ${procedure}`,
    );
  }
  if (h.status !== MessageStatus.OK && h.status !== MessageStatus.ERROR) {
    throw new LibvirtProtocolError(`${name}: unexpected reply status ${h.status}`);
  }
  if (h.status === MessageStatus.ERROR) {
    throw decodeError(
      new XdrReader(reply.payload, 0, reply.payload.length, `error reply to procedure ${procedure}`),
    );
  }
}

/** The payload of a checked reply, decoded by `decode` (none: it must be empty); trailing bytes throw. */
export function replyValue<T>(reply: Message, procedure: number, decode?: (r: XdrReader) => T): T {
  const r = new XdrReader(reply.payload, 0, reply.payload.length, `reply to procedure ${procedure}`);
  if (!decode) {
    r.done();
    return undefined as T;
  }
  const value = decode(r);
  r.done();
  return value;
}

/**
 * Hands a stream packet to its handler: CONTINUE carries data, OK ends the stream, any
 * other status ends it with the daemon's error.
 */
export function deliverStreamPacket(s: StreamHandler, m: Message): void {
  const status = m.header.status;
  if (status === MessageStatus.CONTINUE) s.onData(m.payload);
  else if (status === MessageStatus.OK) s.onEnd();
  else {
    let err: LibvirtError;
    try {
      err = decodeError(new XdrReader(m.payload, 0, m.payload.length, 'stream error'));
    } catch (e) {
      err = e instanceof LibvirtError ? e : new LibvirtProtocolError(String(e));
    }
    s.onError(err);
  }
}
