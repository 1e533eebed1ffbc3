/**
 * The libvirt driver's guest-agent capability: the agent channel's state from the live
 * domain XML (`<channel><target name='org.qemu.guest_agent.0' state='connected'/>`), and
 * guest information from the QEMU guest agent's own commands run through libvirt's
 * `virDomainQemuAgentCommand` (guest-info, guest-get-osinfo, guest-get-host-name,
 * guest-get-timezone, guest-network-get-interfaces, guest-get-users, guest-get-fsinfo),
 * parsed here. A command the agent lacks or refuses leaves its part out.
 */
import { XMLParser } from 'fast-xml-parser';
import type { DomainRef } from '../driver';
import type {
  GuestAgentCommand,
  GuestAgentSupport,
  GuestFilesystem,
  GuestInfo,
  GuestInterface,
  GuestIPAddress,
  GuestOSInfo,
  GuestUser,
} from '../guest-agent';
import { type DomainRef as LibvirtDomain, LibvirtError, VIR_ERR_NO_DOMAIN } from '../libvirt';
import { agentSetAuthorizedKeys, agentSetUserPassword } from './agent-credentials';
import { agentExec, agentPing } from './agent-exec';
import { mapLibvirtError } from './error-map';

/** The virtio-serial port name of the QEMU guest agent (what the converter adds). */
export const GUEST_AGENT_CHANNEL = 'org.qemu.guest_agent.0';

/** Seconds libvirt waits for one agent reply (libvirt's own default is 5 s too). */
const AGENT_TIMEOUT_SECONDS = 5;

/** What the capability needs from the driver. */
export interface GuestAgentHost {
  /** The domain, or a `DriverError` NotFound. */
  lookup(ref: DomainRef): Promise<LibvirtDomain>;
  /** The live domain XML. */
  liveXml(dom: LibvirtDomain): Promise<string>;
  /** Runs one agent command (JSON) and returns the reply text. */
  agentCommand(dom: LibvirtDomain, cmd: string, timeoutSec: number): Promise<string | null>;
}

const xml = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  isArray: (name) => name === 'channel',
});

/** Whether the live domain XML shows the guest agent's channel connected. */
export function agentChannelConnected(liveXml: string): boolean {
  const channels: Array<{ target?: { '@_name'?: string; '@_state'?: string } }> =
    xml.parse(liveXml)?.domain?.devices?.channel ?? [];
  return channels.some(
    (c) => c.target?.['@_name'] === GUEST_AGENT_CHANNEL && c.target?.['@_state'] === 'connected',
  );
}

/** Builds the capability over a driver's libvirt connection. */
export function libvirtGuestAgent(host: GuestAgentHost): GuestAgentSupport {
  const connected = async (dom: LibvirtDomain) => agentChannelConnected(await host.liveXml(dom));
  const call = (dom: LibvirtDomain, cmd: string, t: number) => host.agentCommand(dom, cmd, t);
  const withDomain = async <T>(ref: DomainRef, op: string, fn: (d: LibvirtDomain) => Promise<T>) => {
    const dom = await host.lookup(ref);
    try {
      return await fn(dom);
    } catch (e) {
      throw mapLibvirtError(e, `domain ${dom.name}`, op);
    }
  };
  return {
    setAuthorizedKeys: (ref, user, keys) =>
      withDomain(ref, `set the SSH keys of user ${user}`, (d) => agentSetAuthorizedKeys(call, d, user, keys)),
    exec: (ref, command, args, timeoutSec) =>
      withDomain(ref, `run ${command} in the guest`, (d) => agentExec(call, d, command, args, timeoutSec)),
    ping: (ref, timeoutSec) => withDomain(ref, 'ping the guest agent', (d) => agentPing(call, d, timeoutSec)),
    setUserPassword: (ref, user, password) =>
      withDomain(ref, `set the password of user ${user}`, (d) =>
        agentSetUserPassword(call, d, user, password),
      ),
    connected: async (ref) => connected(await host.lookup(ref)),
    guestInfo: async (ref) => {
      const dom = await host.lookup(ref);
      if (!(await connected(dom))) return undefined;
      // The agent answers guest-info or is not there: only then ask the rest.
      const info = await run(host, dom, 'guest-info');
      if (info === undefined) return undefined;
      const out: GuestInfo = parseAgentInfo(info);
      const [os, hostname, tz, ifaces, users, fs] = await Promise.all([
        run(host, dom, 'guest-get-osinfo'),
        run(host, dom, 'guest-get-host-name'),
        run(host, dom, 'guest-get-timezone'),
        run(host, dom, 'guest-network-get-interfaces'),
        run(host, dom, 'guest-get-users'),
        run(host, dom, 'guest-get-fsinfo'),
      ]);
      if (os !== undefined) out.os = parseOSInfo(os);
      if (hostname !== undefined) {
        const h = str(obj(hostname)['host-name']);
        if (h !== undefined) out.hostname = h;
      }
      if (tz !== undefined) out.timezone = parseTimezone(tz);
      if (ifaces !== undefined) out.interfaces = parseInterfaces(ifaces);
      if (users !== undefined) out.users = parseUsers(users);
      if (fs !== undefined) out.filesystems = parseFilesystems(fs);
      return out;
    },
  };
}

/**
 * One agent command's `return` value; undefined when the agent lacks it, refuses it or
 * does not answer. A domain that vanished rejects (the caller's NotFound).
 */
async function run(host: GuestAgentHost, dom: LibvirtDomain, command: string): Promise<unknown> {
  let reply: string | null;
  try {
    reply = await host.agentCommand(dom, JSON.stringify({ execute: command }), AGENT_TIMEOUT_SECONDS);
  } catch (e) {
    if (e instanceof LibvirtError && e.code === VIR_ERR_NO_DOMAIN) throw e;
    return undefined;
  }
  if (!reply) return undefined;
  try {
    const parsed = JSON.parse(reply) as { return?: unknown };
    return parsed?.return;
  } catch {
    return undefined;
  }
}

// --- parsers of the agent's replies (qemu-ga's QAPI schema, qga/qapi-schema.json) ---------

function obj(v: unknown): Record<string, unknown> {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}
function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}
function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}
function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}
/** Drops undefined fields, so equal answers compare equal as JSON. */
function compact<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

/** `guest-info`: `{version, supported_commands: [{name, enabled}]}`. */
export function parseAgentInfo(ret: unknown): GuestInfo {
  const o = obj(ret);
  const supportedCommands: GuestAgentCommand[] = arr(o.supported_commands)
    .map((c) => ({ name: str(obj(c).name) ?? '', enabled: obj(c).enabled === true }))
    .filter((c) => c.name !== '');
  return { agentVersion: str(o.version) ?? '', supportedCommands };
}

/** `guest-get-osinfo`: os-release and uname fields, dash-separated. */
export function parseOSInfo(ret: unknown): GuestOSInfo {
  const o = obj(ret);
  return compact({
    id: str(o.id),
    name: str(o.name),
    prettyName: str(o['pretty-name']),
    version: str(o.version),
    versionId: str(o['version-id']),
    kernelRelease: str(o['kernel-release']),
    kernelVersion: str(o['kernel-version']),
    machine: str(o.machine),
  });
}

/** `guest-get-timezone`: `{zone?, offset}` (offset in seconds east of UTC). */
export function parseTimezone(ret: unknown): { zone: string; offsetSeconds: number } {
  const o = obj(ret);
  return { zone: str(o.zone) ?? '', offsetSeconds: num(o.offset) ?? 0 };
}

/** `guest-network-get-interfaces`: `[{name, hardware-address?, ip-addresses?: [...]}]`. */
export function parseInterfaces(ret: unknown): GuestInterface[] {
  return arr(ret)
    .map((i) => {
      const o = obj(i);
      const ipAddresses: GuestIPAddress[] = arr(o['ip-addresses'])
        .map((a) => {
          const ao = obj(a);
          const type = ao['ip-address-type'] === 'ipv6' ? 'ipv6' : 'ipv4';
          return {
            address: str(ao['ip-address']) ?? '',
            type,
            prefix: num(ao.prefix) ?? 0,
          } as GuestIPAddress;
        })
        .filter((a) => a.address !== '');
      const mac = str(o['hardware-address'])?.toLowerCase();
      return compact({ name: str(o.name) ?? '', mac, ipAddresses });
    })
    .filter((i) => i.name !== '');
}

/** `guest-get-users`: `[{user, domain?, login-time}]`. */
export function parseUsers(ret: unknown): GuestUser[] {
  return arr(ret)
    .map((u) => {
      const o = obj(u);
      return compact({ name: str(o.user) ?? '', domain: str(o.domain), loginTime: num(o['login-time']) });
    })
    .filter((u) => u.name !== '');
}

/** `guest-get-fsinfo`: `[{name, mountpoint, type, used-bytes?, total-bytes?, disk: [...]}]`. */
export function parseFilesystems(ret: unknown): GuestFilesystem[] {
  return arr(ret)
    .map((f) => {
      const o = obj(f);
      return compact({
        name: str(o.name) ?? '',
        mountPoint: str(o.mountpoint) ?? '',
        type: str(o.type) ?? '',
        usedBytes: num(o['used-bytes']),
        totalBytes: num(o['total-bytes']),
        disks: arr(o.disk).map((d) =>
          compact({ busType: str(obj(d)['bus-type']) ?? '', serial: str(obj(d).serial) }),
        ),
      });
    })
    .filter((f) => f.name !== '' || f.mountPoint !== '');
}
