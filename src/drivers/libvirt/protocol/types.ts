/**
 * Codecs for the shared types of remote_protocol.x and virnetprotocol.x: strings,
 * domains (remote_nonnull_domain), UUIDs, typed parameters (remote_typed_param) and the
 * error struct (remote_error / virNetMessageError).
 */
import { LibvirtError, LibvirtProtocolError } from '../errors';
import type { XdrReader, XdrWriter } from '../xdr';
import { REMOTE_STRING_MAX, VIR_NET_MESSAGE_STRING_MAX, VIR_UUID_BUFLEN } from './constants';

/** A domain handle as libvirt passes it: name, UUID and id (-1 when inactive). */
export interface DomainRef {
  name: string;
  /** Canonical lowercase UUID string, e.g. `6695eb01-f6a4-8304-79aa-97f2502e193f`. */
  uuid: string;
  id: number;
}

const UUID_RE = /^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/;

/** Parses a UUID string into libvirt's 16 raw bytes; rejects anything else. */
export function uuidToBytes(uuid: string): Buffer {
  if (!UUID_RE.test(uuid))
    throw new TypeError(`uuid: "${uuid}" is not a UUID (expected 8-4-4-4-12 hex digits)`);
  return Buffer.from(uuid.replace(/-/g, ''), 'hex');
}

/** Formats 16 raw bytes as a canonical UUID string. */
export function bytesToUuid(b: Uint8Array): string {
  const h = Buffer.from(b).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

export function writeString(w: XdrWriter, s: string): void {
  w.string(s, REMOTE_STRING_MAX);
}

export function readString(r: XdrReader): string {
  return r.string(REMOTE_STRING_MAX);
}

export function writeOptString(w: XdrWriter, s: string | null | undefined): void {
  w.optional(s, writeString);
}

export function readOptString(r: XdrReader): string | null {
  return r.optional(readString);
}

export function writeDomain(w: XdrWriter, d: DomainRef): void {
  w.string(d.name, REMOTE_STRING_MAX);
  w.fixedOpaque(uuidToBytes(d.uuid), VIR_UUID_BUFLEN);
  w.int(d.id);
}

export function readDomain(r: XdrReader): DomainRef {
  const name = r.string(REMOTE_STRING_MAX);
  const uuid = bytesToUuid(r.fixedOpaque(VIR_UUID_BUFLEN));
  const id = r.int();
  return { name, uuid, id };
}

/** virTypedParameterType */
export const TypedParamType = {
  INT: 1,
  UINT: 2,
  LLONG: 3,
  ULLONG: 4,
  DOUBLE: 5,
  BOOLEAN: 6,
  STRING: 7,
} as const;

/** One virTypedParameter. 64-bit values are bigints so they stay exact. */
export type TypedParam =
  | { field: string; type: 'int' | 'uint' | 'double'; value: number }
  | { field: string; type: 'llong' | 'ullong'; value: bigint }
  | { field: string; type: 'boolean'; value: boolean }
  | { field: string; type: 'string'; value: string };

/** The plain value of a typed parameter. */
export type TypedParamValue = number | bigint | boolean | string;

/** Helpers that build typed parameters with an explicit wire type. */
export const tp = {
  int: (field: string, value: number): TypedParam => ({ field, type: 'int', value }),
  uint: (field: string, value: number): TypedParam => ({ field, type: 'uint', value }),
  llong: (field: string, value: bigint | number): TypedParam => ({
    field,
    type: 'llong',
    value: BigInt(value),
  }),
  ullong: (field: string, value: bigint | number): TypedParam => ({
    field,
    type: 'ullong',
    value: BigInt(value),
  }),
  double: (field: string, value: number): TypedParam => ({ field, type: 'double', value }),
  boolean: (field: string, value: boolean): TypedParam => ({ field, type: 'boolean', value }),
  string: (field: string, value: string): TypedParam => ({ field, type: 'string', value }),
};

/** Typed parameters as a plain record, field name to value (the last duplicate wins). */
export function typedParamsToRecord(params: readonly TypedParam[]): Record<string, TypedParamValue> {
  const out: Record<string, TypedParamValue> = {};
  for (const p of params) out[p.field] = p.value;
  return out;
}

/** VIR_TYPED_PARAM_FIELD_LENGTH: field names are at most 79 bytes plus NUL. */
const TYPED_PARAM_FIELD_MAX = 79;

export function writeTypedParam(w: XdrWriter, p: TypedParam): void {
  if (Buffer.byteLength(p.field) > TYPED_PARAM_FIELD_MAX) {
    throw new TypeError(
      `typed parameter "${p.field}": field name longer than ${TYPED_PARAM_FIELD_MAX} bytes`,
    );
  }
  w.string(p.field, REMOTE_STRING_MAX);
  switch (p.type) {
    case 'int':
      w.int(TypedParamType.INT).int(p.value);
      break;
    case 'uint':
      w.int(TypedParamType.UINT).uint(p.value);
      break;
    case 'llong':
      w.int(TypedParamType.LLONG).hyper(p.value);
      break;
    case 'ullong':
      w.int(TypedParamType.ULLONG).uhyper(p.value);
      break;
    case 'double':
      w.int(TypedParamType.DOUBLE).double(p.value);
      break;
    case 'boolean':
      w.int(TypedParamType.BOOLEAN).int(p.value ? 1 : 0);
      break;
    case 'string':
      w.int(TypedParamType.STRING).string(p.value, REMOTE_STRING_MAX);
      break;
    default:
      throw new TypeError(`typed parameter "${(p as TypedParam).field}": unknown type`);
  }
}

export function readTypedParam(r: XdrReader): TypedParam {
  const field = r.string(REMOTE_STRING_MAX);
  const type = r.int();
  switch (type) {
    case TypedParamType.INT:
      return { field, type: 'int', value: r.int() };
    case TypedParamType.UINT:
      return { field, type: 'uint', value: r.uint() };
    case TypedParamType.LLONG:
      return { field, type: 'llong', value: r.hyper() };
    case TypedParamType.ULLONG:
      return { field, type: 'ullong', value: r.uhyper() };
    case TypedParamType.DOUBLE:
      return { field, type: 'double', value: r.double() };
    case TypedParamType.BOOLEAN:
      return { field, type: 'boolean', value: r.int() !== 0 };
    case TypedParamType.STRING:
      return { field, type: 'string', value: r.string(REMOTE_STRING_MAX) };
    default:
      throw new LibvirtProtocolError(`typed parameter "${field}" has unknown type ${type}`);
  }
}

export function writeTypedParams(w: XdrWriter, params: readonly TypedParam[], max: number): void {
  w.array(params, max, writeTypedParam);
}

export function readTypedParams(r: XdrReader, max: number): TypedParam[] {
  // Smallest encoded param: empty field (4) + discriminant (4) + int (4).
  return r.array(max, readTypedParam, 12);
}

function readNetString(r: XdrReader): string {
  return r.string(VIR_NET_MESSAGE_STRING_MAX);
}

/** Decodes a virNetMessageError payload into a `LibvirtError`. */
export function decodeError(r: XdrReader): LibvirtError {
  const code = r.int();
  const domain = r.int();
  const message = r.optional(readNetString);
  const level = r.int();
  r.optional((rr) => {
    rr.string(VIR_NET_MESSAGE_STRING_MAX);
    rr.fixedOpaque(VIR_UUID_BUFLEN);
    return rr.int();
  });
  const str1 = r.optional(readNetString);
  const str2 = r.optional(readNetString);
  const str3 = r.optional(readNetString);
  const int1 = r.int();
  const int2 = r.int();
  r.optional((rr) => {
    rr.string(VIR_NET_MESSAGE_STRING_MAX);
    return rr.fixedOpaque(VIR_UUID_BUFLEN);
  });
  r.done();
  return new LibvirtError({
    code,
    domain,
    level,
    message: message ?? `libvirt error code ${code} (no message)`,
    str1,
    str2,
    str3,
    int1,
    int2,
  });
}

/** Encodes a virNetMessageError (used by tests and fake daemons). */
export function encodeError(
  w: XdrWriter,
  e: { code: number; domain: number; message: string | null; level: number },
): void {
  w.int(e.code).int(e.domain);
  w.optional(e.message, (ww, s) => ww.string(s, VIR_NET_MESSAGE_STRING_MAX));
  w.int(e.level);
  w.int(0); // dom
  w.int(0).int(0).int(0); // str1..3
  w.int(0).int(0); // int1, int2
  w.int(0); // net
}
