/**
 * Struct layouts of remote_protocol.x used by the client: the return structs of the
 * typed procedures and the event messages, each decoded field by field in libvirt's
 * order. (rpcgen encodes `char`, `unsigned char` and `unsigned short` as 4-byte ints.)
 */
import type { XdrReader } from '../xdr';
import {
  REMOTE_AUTH_TYPE_LIST_MAX,
  REMOTE_CONNECT_GET_ALL_DOMAIN_STATS_MAX,
  REMOTE_DOMAIN_LIST_MAX,
  REMOTE_DOMAIN_MEMORY_STATS_MAX,
} from './constants';
import { type DomainRef, readDomain, readString, readTypedParams, type TypedParam } from './types';

/** remote_node_get_info_ret (virNodeInfo). */
export interface NodeInfo {
  model: string;
  /** Memory in KiB. */
  memory: number;
  cpus: number;
  mhz: number;
  nodes: number;
  sockets: number;
  cores: number;
  threads: number;
}

export function readNodeInfo(r: XdrReader): NodeInfo {
  // char model[32]: a fixed array of 32 chars, each an XDR int; NUL-terminated.
  const chars = r.fixedArray(32, (rr) => rr.int());
  const end = chars.indexOf(0);
  const model = Buffer.from(chars.slice(0, end < 0 ? 32 : end).map((c) => c & 0xff)).toString('latin1');
  return {
    model,
    memory: r.uhyperNumber(),
    cpus: r.int(),
    mhz: r.int(),
    nodes: r.int(),
    sockets: r.int(),
    cores: r.int(),
    threads: r.int(),
  };
}

/** virDomainState */
export const DomainState = {
  NOSTATE: 0,
  RUNNING: 1,
  BLOCKED: 2,
  PAUSED: 3,
  SHUTDOWN: 4,
  SHUTOFF: 5,
  CRASHED: 6,
  PMSUSPENDED: 7,
} as const;

/** remote_domain_get_info_ret (virDomainInfo). */
export interface DomainInfo {
  /** virDomainState */
  state: number;
  /** Maximum memory in KiB. */
  maxMem: number;
  /** Current memory in KiB. */
  memory: number;
  nrVirtCpu: number;
  /** CPU time used, in nanoseconds. */
  cpuTime: number;
}

export function readDomainInfo(r: XdrReader): DomainInfo {
  return {
    state: r.int(),
    maxMem: r.uhyperNumber(),
    memory: r.uhyperNumber(),
    nrVirtCpu: r.int(),
    cpuTime: r.uhyperNumber(),
  };
}

/** remote_domain_get_state_ret */
export interface DomainStateInfo {
  state: number;
  reason: number;
}

/** remote_domain_get_job_info_ret (virDomainJobInfo). */
export interface DomainJobInfo {
  /** virDomainJobType: 0 none, 1 bounded, 2 unbounded, 3 completed, 4 failed, 5 cancelled. */
  type: number;
  timeElapsed: number;
  timeRemaining: number;
  dataTotal: number;
  dataProcessed: number;
  dataRemaining: number;
  memTotal: number;
  memProcessed: number;
  memRemaining: number;
  fileTotal: number;
  fileProcessed: number;
  fileRemaining: number;
}

export function readJobInfo(r: XdrReader): DomainJobInfo {
  return {
    type: r.int(),
    timeElapsed: r.uhyperNumber(),
    timeRemaining: r.uhyperNumber(),
    dataTotal: r.uhyperNumber(),
    dataProcessed: r.uhyperNumber(),
    dataRemaining: r.uhyperNumber(),
    memTotal: r.uhyperNumber(),
    memProcessed: r.uhyperNumber(),
    memRemaining: r.uhyperNumber(),
    fileTotal: r.uhyperNumber(),
    fileProcessed: r.uhyperNumber(),
    fileRemaining: r.uhyperNumber(),
  };
}

/** remote_domain_block_stats_ret; -1 means "not supported by the hypervisor". */
export interface BlockStats {
  rdReq: number;
  rdBytes: number;
  wrReq: number;
  wrBytes: number;
  errs: number;
}

export function readBlockStats(r: XdrReader): BlockStats {
  return {
    rdReq: r.hyperNumber(),
    rdBytes: r.hyperNumber(),
    wrReq: r.hyperNumber(),
    wrBytes: r.hyperNumber(),
    errs: r.hyperNumber(),
  };
}

/** remote_domain_interface_stats_ret; -1 means "not supported by the hypervisor". */
export interface InterfaceStats {
  rxBytes: number;
  rxPackets: number;
  rxErrs: number;
  rxDrop: number;
  txBytes: number;
  txPackets: number;
  txErrs: number;
  txDrop: number;
}

export function readInterfaceStats(r: XdrReader): InterfaceStats {
  return {
    rxBytes: r.hyperNumber(),
    rxPackets: r.hyperNumber(),
    rxErrs: r.hyperNumber(),
    rxDrop: r.hyperNumber(),
    txBytes: r.hyperNumber(),
    txPackets: r.hyperNumber(),
    txErrs: r.hyperNumber(),
    txDrop: r.hyperNumber(),
  };
}

/** remote_domain_memory_stat: `tag` is virDomainMemoryStatTags (e.g. 6 = actual balloon). */
export interface MemoryStat {
  tag: number;
  val: number;
}

export function readMemoryStats(r: XdrReader): MemoryStat[] {
  return r.array(REMOTE_DOMAIN_MEMORY_STATS_MAX, (rr) => ({ tag: rr.int(), val: rr.uhyperNumber() }), 12);
}

/** remote_connect_list_all_domains_ret: the domains (the trailing count is checked). */
export function readDomainList(r: XdrReader): DomainRef[] {
  const doms = r.array(REMOTE_DOMAIN_LIST_MAX, readDomain, 24);
  r.uint();
  return doms;
}

/** remote_domain_stats_record */
export interface DomainStatsRecord {
  dom: DomainRef;
  params: TypedParam[];
}

export function readDomainStats(r: XdrReader): DomainStatsRecord[] {
  return r.array(
    REMOTE_DOMAIN_LIST_MAX,
    (rr) => ({ dom: readDomain(rr), params: readTypedParams(rr, REMOTE_CONNECT_GET_ALL_DOMAIN_STATS_MAX) }),
    28,
  );
}

export function readAuthList(r: XdrReader): number[] {
  return r.array(REMOTE_AUTH_TYPE_LIST_MAX, (rr) => rr.int());
}

/** virDomainEventID values the client can subscribe to. */
export const DomainEventId = {
  LIFECYCLE: 0,
  REBOOT: 1,
  DEVICE_REMOVED: 15,
  AGENT_LIFECYCLE: 18,
} as const;

/** virDomainEventType (the `event` of a lifecycle event). */
export const LifecycleEvent = {
  DEFINED: 0,
  UNDEFINED: 1,
  STARTED: 2,
  SUSPENDED: 3,
  RESUMED: 4,
  STOPPED: 5,
  SHUTDOWN: 6,
  PMSUSPENDED: 7,
  CRASHED: 8,
} as const;

const LIFECYCLE_NAMES = [
  'defined',
  'undefined',
  'started',
  'suspended',
  'resumed',
  'stopped',
  'shutdown',
  'pmsuspended',
  'crashed',
] as const;

/** Lowercase name of a lifecycle event number, e.g. 2 -> `started`. */
export type LifecycleEventName = (typeof LIFECYCLE_NAMES)[number] | 'unknown';

export function lifecycleEventName(event: number): LifecycleEventName {
  return LIFECYCLE_NAMES[event] ?? 'unknown';
}

/** A domain lifecycle event (VIR_DOMAIN_EVENT_ID_LIFECYCLE). */
export interface LifecycleEventMsg {
  kind: 'lifecycle';
  callbackId: number;
  dom: DomainRef;
  /** virDomainEventType */
  event: number;
  eventName: LifecycleEventName;
  /** Per-event detail (e.g. for STOPPED: 1 destroyed, 0 shutdown, 5 failed). */
  detail: number;
}

/** A guest reboot (VIR_DOMAIN_EVENT_ID_REBOOT). */
export interface RebootEventMsg {
  kind: 'reboot';
  callbackId: number;
  dom: DomainRef;
}

/** A device finished unplugging (VIR_DOMAIN_EVENT_ID_DEVICE_REMOVED). */
export interface DeviceRemovedEventMsg {
  kind: 'device-removed';
  callbackId: number;
  dom: DomainRef;
  devAlias: string;
}

/** The guest agent connected or disconnected (VIR_DOMAIN_EVENT_ID_AGENT_LIFECYCLE). */
export interface AgentLifecycleEventMsg {
  kind: 'agent-lifecycle';
  callbackId: number;
  dom: DomainRef;
  /** 1 connected, 2 disconnected. */
  state: number;
  /** 0 unknown, 1 domain started, 2 channel event. */
  reason: number;
}

/** Any domain event the client delivers. */
export type DomainEvent = LifecycleEventMsg | RebootEventMsg | DeviceRemovedEventMsg | AgentLifecycleEventMsg;

export function readLifecycleEvent(r: XdrReader): LifecycleEventMsg {
  const callbackId = r.int();
  const dom = readDomain(r);
  const event = r.int();
  const detail = r.int();
  return { kind: 'lifecycle', callbackId, dom, event, eventName: lifecycleEventName(event), detail };
}

export function readRebootEvent(r: XdrReader): RebootEventMsg {
  const callbackId = r.int();
  return { kind: 'reboot', callbackId, dom: readDomain(r) };
}

export function readDeviceRemovedEvent(r: XdrReader): DeviceRemovedEventMsg {
  const callbackId = r.int();
  const dom = readDomain(r);
  return { kind: 'device-removed', callbackId, dom, devAlias: readString(r) };
}

export function readAgentLifecycleEvent(r: XdrReader): AgentLifecycleEventMsg {
  const callbackId = r.int();
  const dom = readDomain(r);
  return { kind: 'agent-lifecycle', callbackId, dom, state: r.int(), reason: r.int() };
}
