/**
 * `LibvirtClient`: typed async methods over libvirt's remote protocol, spoken directly on
 * libvirtd's unix socket (no native addon). Opens a connection URI (`qemu:///system`,
 * `test:///default`, ...) through the daemon, delivers domain events as async streams,
 * keeps the connection alive and, when asked, reconnects after the daemon restarts.
 */

import { type LibvirtClientOptions, MigrateFlags } from './client-options';
import { agentCallTimeout, checkText } from './client-tables';
import { LibvirtConnection } from './connection';
import { DomainConsole } from './console';
import { LibvirtDomainCalls } from './domain-calls';
import { LibvirtError, VIR_ERR_ERROR, VIR_ERR_INVALID_ARG, VIR_FROM_REMOTE } from './errors';
import {
  QemuProc,
  REMOTE_DOMAIN_LAUNCH_SECURITY_INFO_PARAMS_MAX,
  REMOTE_DOMAIN_LAUNCH_SECURITY_STATE_PARAMS_MAX,
  REMOTE_DOMAIN_LIST_MAX,
  REMOTE_DOMAIN_MIGRATE_PARAM_LIST_MAX,
  REMOTE_MIGRATE_COOKIE_MAX,
  REMOTE_NODE_SEV_INFO_MAX,
  REMOTE_PROGRAM,
  REMOTE_PROTOCOL_VERSION,
  RemoteProc,
} from './protocol/constants';
import {
  type DomainStatsRecord,
  type NodeInfo,
  readDomainList,
  readDomainStats,
  readNodeInfo,
} from './protocol/remote';
import {
  type DomainRef,
  readOptString,
  readString,
  readTypedParams,
  type TypedParam,
  writeDomain,
  writeOptString,
  writeString,
  writeTypedParams,
} from './protocol/types';
import { captureScreenshot, type DomainScreenshot, type ScreenshotOptions } from './screenshot';
import { DEFAULT_CALL_TIMEOUT_MS, DEFAULT_SOCKET_PATH } from './transport';

export {
  AffectFlags,
  type ClientState,
  CoreDumpFormat,
  CreateFlags,
  DestroyFlags,
  DomainXMLFlags,
  DumpFlags,
  type LibvirtClientOptions,
  ListDomainsFlags,
  MigrateFlags,
  type ReconnectOptions,
  UndefineFlags,
  VIR_CONNECT_RO,
} from './client-options';
export type { DomainEventKind } from './client-tables';
/**
 * A connection to libvirt through the daemon's unix socket.
 *
 * ```ts
 * const c = await LibvirtClient.connect({ uri: 'qemu:///system' });
 * const dom = await c.domainDefineXML(xml);
 * await c.domainCreate(dom);
 * for await (const ev of await c.domainEvents('lifecycle', dom)) console.log(ev.eventName);
 * await c.close();
 * ```
 */
export class LibvirtClient extends LibvirtDomainCalls {
  /**
   * Connects to the daemon, checks that no authentication is required (root over the unix
   * socket), and opens `uri`. Fails with `LibvirtConnectionError` when the socket cannot
   * be reached and with `LibvirtError` code `VIR_ERR_AUTH_FAILED` when the daemon demands
   * SASL or polkit, which this client does not speak.
   */
  static async connect(opts: LibvirtClientOptions = {}): Promise<LibvirtClient> {
    const full = {
      ...opts,
      uri: opts.uri ?? 'qemu:///system',
      socketPath: opts.socketPath ?? DEFAULT_SOCKET_PATH,
    };
    checkText('uri', full.uri);
    const transport = await LibvirtConnection.openTransport(full);
    return new LibvirtClient(transport, full);
  }

  // ---- connection and host ----

  /** Hypervisor version as libvirt encodes it (major * 1e6 + minor * 1e3 + micro). */
  async getVersion(): Promise<number> {
    return this.rpc(RemoteProc.CONNECT_GET_VERSION, undefined, (r) => r.uhyperNumber());
  }

  /** libvirt library version of the daemon (major * 1e6 + minor * 1e3 + micro). */
  async getLibVersion(): Promise<number> {
    return this.rpc(RemoteProc.CONNECT_GET_LIB_VERSION, undefined, (r) => r.uhyperNumber());
  }

  /** Driver name, e.g. `QEMU` or `Test`. */
  async getType(): Promise<string> {
    return this.rpc(RemoteProc.CONNECT_GET_TYPE, undefined, readString);
  }

  /** The canonical URI of the opened connection. */
  async getURI(): Promise<string> {
    return this.rpc(RemoteProc.CONNECT_GET_URI, undefined, readString);
  }

  async getHostname(): Promise<string> {
    return this.rpc(RemoteProc.CONNECT_GET_HOSTNAME, undefined, readString);
  }

  /** Host capabilities XML (`virsh capabilities`). */
  async getCapabilities(): Promise<string> {
    return this.rpc(RemoteProc.CONNECT_GET_CAPABILITIES, undefined, readString);
  }

  /** Domain capabilities XML (`virsh domcapabilities`); every selector is optional. */
  async getDomainCapabilities(
    opts: { emulatorBin?: string; arch?: string; machine?: string; virtType?: string; flags?: number } = {},
  ): Promise<string> {
    for (const [k, v] of Object.entries(opts)) if (typeof v === 'string') checkText(k, v);
    return this.rpc(
      RemoteProc.CONNECT_GET_DOMAIN_CAPABILITIES,
      (w) => {
        writeOptString(w, opts.emulatorBin);
        writeOptString(w, opts.arch);
        writeOptString(w, opts.machine);
        writeOptString(w, opts.virtType);
        w.uint(opts.flags ?? 0, 'flags');
      },
      readString,
    );
  }

  async nodeGetInfo(): Promise<NodeInfo> {
    return this.rpc(RemoteProc.NODE_GET_INFO, undefined, readNodeInfo);
  }

  /** AMD SEV platform data (pdh, cert-chain, cbitpos, ...); fails on hosts without SEV. */
  async nodeGetSEVInfo(flags = 0): Promise<TypedParam[]> {
    return this.rpc(
      RemoteProc.NODE_GET_SEV_INFO,
      (w) => w.int(0).uint(flags, 'flags'),
      (r) => {
        const params = readTypedParams(r, REMOTE_NODE_SEV_INFO_MAX);
        r.int(); // nparams
        return params;
      },
    );
  }

  /** All domains matching `flags` (ListDomainsFlags; 0 = all). */
  async listAllDomains(flags = 0): Promise<DomainRef[]> {
    return this.rpc(
      RemoteProc.CONNECT_LIST_ALL_DOMAINS,
      (w) => w.int(1).uint(flags, 'flags'),
      readDomainList,
    );
  }

  /**
   * Bulk statistics (`virsh domstats`): `stats` selects groups (virDomainStatsTypes, 0 =
   * all), `doms` restricts to given domains (empty = all, filtered by `flags`).
   */
  async getAllDomainStats(doms: DomainRef[] = [], stats = 0, flags = 0): Promise<DomainStatsRecord[]> {
    return this.rpc(
      RemoteProc.CONNECT_GET_ALL_DOMAIN_STATS,
      (w) => {
        w.array(doms, REMOTE_DOMAIN_LIST_MAX, writeDomain);
        w.uint(stats, 'stats').uint(flags, 'flags');
      },
      readDomainStats,
    );
  }

  // ---- domain lifecycle ----

  /**
   * Peer-to-peer migration with typed parameters (virDomainMigrateToURI3 with
   * VIR_MIGRATE_PEER2PEER): the source daemon connects to `destUri` itself. The call
   * returns when the migration has finished.
   */
  async domainMigrateToURI3(
    dom: DomainRef,
    destUri: string,
    params: TypedParam[],
    flags: number,
  ): Promise<void> {
    checkText('destination URI', destUri);
    if ((flags & MigrateFlags.PEER2PEER) === 0) {
      throw new LibvirtError({
        code: VIR_ERR_INVALID_ARG,
        domain: VIR_FROM_REMOTE,
        level: VIR_ERR_ERROR,
        message: 'domainMigrateToURI3: only peer-to-peer migration is supported; set MigrateFlags.PEER2PEER',
      });
    }
    await this.rpc(
      RemoteProc.DOMAIN_MIGRATE_PERFORM3_PARAMS,
      (w) => {
        writeDomain(w, dom);
        writeOptString(w, destUri);
        writeTypedParams(w, params, REMOTE_DOMAIN_MIGRATE_PARAM_LIST_MAX);
        w.opaque(Buffer.alloc(0), REMOTE_MIGRATE_COOKIE_MAX);
        w.uint(flags, 'flags');
      },
      (r) => r.opaque(REMOTE_MIGRATE_COOKIE_MAX),
      0, // returns when the migration ends, however long that takes
    );
  }

  // ---- console ----

  /**
   * Opens a domain's console (`devName` e.g. `serial0`; null for the first console) as a
   * stream: iterate it for output, `write` for input, `close` to hang up. Flags:
   * `ConsoleFlags.FORCE` takes over a console another client holds.
   */
  async domainOpenConsole(dom: DomainRef, devName: string | null = null, flags = 0): Promise<DomainConsole> {
    if (devName !== null) checkText('console device name', devName);
    const t = await this.usableTransport();
    const con = new DomainConsole(t);
    await t.call(
      REMOTE_PROGRAM,
      REMOTE_PROTOCOL_VERSION,
      RemoteProc.DOMAIN_OPEN_CONSOLE,
      (w) => {
        writeDomain(w, dom);
        writeOptString(w, devName);
        w.uint(flags, 'flags');
      },
      undefined,
      con.handler,
    );
    return con;
  }

  // ---- display ----

  /** The guest display's current picture (virDomainScreenshot; QEMU gives a PPM). */
  async domainScreenshot(dom: DomainRef, o: ScreenshotOptions = {}): Promise<DomainScreenshot> {
    return captureScreenshot(await this.usableTransport(), dom, o);
  }

  // ---- QEMU-specific ----

  /** Runs a QEMU monitor command (QMP JSON, or HMP with flags = 1) and returns the reply text. */
  async qemuMonitorCommand(dom: DomainRef, cmd: string, flags = 0): Promise<string> {
    checkText('monitor command', cmd);
    return this.qemuRpc(
      QemuProc.DOMAIN_MONITOR_COMMAND,
      (w) => {
        writeDomain(w, dom);
        writeString(w, cmd);
        w.uint(flags, 'flags');
      },
      readString,
    );
  }

  /**
   * Runs a guest-agent command (JSON) and returns the reply; `timeoutSec` is -1 for
   * libvirt's default, -2 to block until the agent answers, 0 not to wait, or seconds
   * (libvirt's VIR_DOMAIN_QEMU_AGENT_COMMAND_DEFAULT, _BLOCK, _NOWAIT).
   */
  async qemuAgentCommand(dom: DomainRef, cmd: string, timeoutSec = -1, flags = 0): Promise<string | null> {
    checkText('agent command', cmd);
    return this.qemuRpc(
      QemuProc.DOMAIN_AGENT_COMMAND,
      (w) => {
        writeDomain(w, dom);
        writeString(w, cmd);
        w.int(timeoutSec, 'timeoutSec');
        w.uint(flags, 'flags');
      },
      readOptString,
      // Blocking (-2) waits for the agent without limit; a timeout in seconds extends ours.
      agentCallTimeout(this.opts.callTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS, timeoutSec),
    );
  }

  // ---- launch security (SEV) ----

  /** Launch-security data of a running domain (e.g. `sev-measurement`). */
  async domainGetLaunchSecurityInfo(dom: DomainRef, flags = 0): Promise<TypedParam[]> {
    return this.rpc(
      RemoteProc.DOMAIN_GET_LAUNCH_SECURITY_INFO,
      (w) => {
        writeDomain(w, dom);
        w.uint(flags, 'flags');
      },
      (r) => readTypedParams(r, REMOTE_DOMAIN_LAUNCH_SECURITY_INFO_PARAMS_MAX),
    );
  }

  /** Injects a launch secret (`sev-secret`, `sev-secret-header`, ...) into a paused SEV domain. */
  async domainSetLaunchSecurityState(dom: DomainRef, params: TypedParam[], flags = 0): Promise<void> {
    await this.rpc(RemoteProc.DOMAIN_SET_LAUNCH_SECURITY_STATE, (w) => {
      writeDomain(w, dom);
      writeTypedParams(w, params, REMOTE_DOMAIN_LAUNCH_SECURITY_STATE_PARAMS_MAX);
      w.uint(flags, 'flags');
    });
  }

  // ---- events ----
}
