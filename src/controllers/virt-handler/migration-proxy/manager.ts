/**
 * The migration proxies of one handler, by migration (upstream's migrationProxyManager):
 * the target node starts a TLS listener per unix socket of the target launcher (libvirt's
 * daemon, QEMU's migration and block streams) and advertises the ports; the source node
 * starts a unix socket per advertised port in the source pod's directory. Whether a
 * migration's connections are TLS is the migration's own `disableTLS` (the configuration
 * virt-controller copied into `status.migrationState.migrationConfiguration` at hand-over),
 * so both handlers agree even when the KubeVirt CR changes while it starts; the cluster's
 * setting only stands in for a migration that carries none.
 */

import type { VirtualMachineInstanceMigrationState } from '../../../api/generated/types';
import { proxyKey, sourceUnixFile } from './ports';
import { type MigrationProxy, startSourceProxy, startTargetProxy } from './proxy';
import type { MigrationTlsMaterial } from './tls';

/** What the manager needs from its handler. */
export interface MigrationProxyManagerOptions {
  /** Address the target listeners bind (the node's own address). */
  bindHost: string;
  /** The handler's serving (node) certificate, key and the KubeVirt CA. */
  serverTls: () => MigrationTlsMaterial;
  /** The handler's client certificate, key and the KubeVirt CA. */
  clientTls: () => MigrationTlsMaterial;
  /** `spec.configuration.migrations.disableTLS` in force: for a migration that does not say. */
  disableTls: () => boolean;
  /** Owner of the source sockets (the launcher's user). */
  socketOwner?: { uid: number; gid: number };
  /** The kernel-copy relay for plain connections (relay.ts); undefined: Node copies them. */
  relay?: string;
  /** The OpenSSL relay for TLS connections (relay.ts); undefined: Node's TLS. */
  tlsRelay?: string;
  log?: (message: string) => void;
}

/** The key port (0: libvirt's daemon, 49152, 49153) a target launcher socket stands for. */
export interface TargetSocket {
  port: number;
  unixPath: string;
}

/**
 * The migration's own `disableTLS`: what virt-controller copied from the cluster (a policy
 * cannot set it) when it handed the migration over; undefined when the migration carries
 * no configuration (written by a controller that did not copy one).
 */
export function migrationDisablesTls(ms: VirtualMachineInstanceMigrationState): boolean | undefined {
  return ms.migrationConfiguration ? ms.migrationConfiguration.disableTLS === true : undefined;
}

/** The migration proxies of one handler. */
export class MigrationProxyManager {
  private readonly targets = new Map<
    string,
    { sockets: string; tls: boolean; proxies: { port: number; proxy: MigrationProxy }[] }
  >();
  private readonly sources = new Map<
    string,
    { plan: string; tls: boolean; proxies: { port: number; proxy: MigrationProxy }[] }
  >();
  private shuttingDown = false;

  constructor(private readonly o: MigrationProxyManagerOptions) {}

  /**
   * Starts (once) the target listeners of migration `key` for the target launcher's
   * sockets; returns upstream's targetDirectMigrationNodePorts: listener port -> key port.
   * `plain`: the migration's `disableTLS` (`migrationDisablesTls`); undefined: the cluster's.
   */
  async startTarget(key: string, sockets: TargetSocket[], plain?: boolean): Promise<Record<string, number>> {
    if (this.shuttingDown) throw new Error('virt-handler is shutting down: no new migration listeners');
    const id = JSON.stringify(sockets);
    const have = this.targets.get(key);
    if (have?.sockets !== id) {
      if (have) await this.stopTarget(key);
      const tls = (plain ?? this.o.disableTls()) ? undefined : this.o.serverTls;
      const proxies: { port: number; proxy: MigrationProxy }[] = [];
      try {
        for (const s of sockets) {
          const proxy = await startTargetProxy({
            host: this.o.bindHost,
            port: 0,
            unixTarget: s.unixPath,
            tls,
            relay: this.o.relay,
            tlsRelay: this.o.tlsRelay,
            log: this.o.log,
          });
          proxies.push({ port: s.port, proxy });
        }
      } catch (e) {
        await Promise.all(proxies.map((p) => p.proxy.stop()));
        throw e;
      }
      this.targets.set(key, { sockets: id, tls: tls !== undefined, proxies });
    }
    return this.targetPorts(key);
  }

  /** Listener port -> key port of migration `key` (empty when none). */
  targetPorts(key: string): Record<string, number> {
    const out: Record<string, number> = {};
    for (const p of this.targets.get(key)?.proxies ?? []) out[String(p.proxy.port)] = p.port;
    return out;
  }

  async stopTarget(key: string): Promise<void> {
    const have = this.targets.get(key);
    this.targets.delete(key);
    await Promise.all((have?.proxies ?? []).map((p) => p.proxy.stop()));
    this.logClosed('target', key, have);
  }

  /** One line per migration and side: what each proxy carried, and whether over TLS. */
  private logClosed(
    side: string,
    key: string,
    have: { tls: boolean; proxies: { port: number; proxy: MigrationProxy }[] } | undefined,
  ): void {
    if (!have?.proxies.length) return;
    const ports = have.proxies.map((p) => `${p.port}: ${p.proxy.bytes.out} out, ${p.proxy.bytes.in} in`);
    const carrier = have.tls
      ? `TLS${this.o.tlsRelay ? ', OpenSSL relay' : ''}`
      : `plain TCP${this.o.relay ? ', kernel relay' : ''}`;
    this.o.log?.(
      `migration ${key}: ${side} proxies closed (${carrier}; bytes by key port ${ports.join('; ')})`,
    );
  }

  /**
   * Starts (once) the source sockets of migration `key` under `baseDir` (a directory the
   * source launcher sees): one per advertised port, dialling `targetHost`. Returns key
   * port -> unix socket path. `plain` as for `startTarget`.
   */
  async startSource(
    key: string,
    targetHost: string,
    ports: Record<string, number>,
    baseDir: string,
    plain?: boolean,
  ): Promise<Record<number, string>> {
    if (this.shuttingDown) throw new Error('virt-handler is shutting down: no new migration sockets');
    const plan = JSON.stringify([targetHost, ports, baseDir]);
    const have = this.sources.get(key);
    if (have?.plan !== plan) {
      if (have) await this.stopSource(key);
      const tls = (plain ?? this.o.disableTls()) ? undefined : this.o.clientTls;
      const proxies: { port: number; proxy: MigrationProxy }[] = [];
      try {
        for (const [listener, port] of Object.entries(ports)) {
          const proxy = await startSourceProxy({
            unixPath: sourceUnixFile(baseDir, proxyKey(key, port)),
            host: targetHost,
            port: Number(listener),
            tls,
            owner: this.o.socketOwner,
            relay: this.o.relay,
            tlsRelay: this.o.tlsRelay,
            log: this.o.log,
          });
          proxies.push({ port, proxy });
        }
      } catch (e) {
        await Promise.all(proxies.map((p) => p.proxy.stop()));
        throw e;
      }
      this.sources.set(key, { plan, tls: tls !== undefined, proxies });
    }
    return this.sourceFiles(key);
  }

  /** Key port -> unix socket of migration `key`'s source sockets. */
  sourceFiles(key: string): Record<number, string> {
    const out: Record<number, string> = {};
    for (const p of this.sources.get(key)?.proxies ?? []) out[p.port] = p.proxy.unixPath ?? '';
    return out;
  }

  async stopSource(key: string): Promise<void> {
    const have = this.sources.get(key);
    this.sources.delete(key);
    await Promise.all((have?.proxies ?? []).map((p) => p.proxy.stop()));
    this.logClosed('source', key, have);
  }

  /** Bytes carried so far by migration `key`'s proxies on this handler (out: towards the target). */
  bytes(key: string): { out: number; in: number } {
    const all = [...(this.sources.get(key)?.proxies ?? []), ...(this.targets.get(key)?.proxies ?? [])];
    return all.reduce((t, p) => ({ out: t.out + p.proxy.bytes.out, in: t.in + p.proxy.bytes.in }), {
      out: 0,
      in: 0,
    });
  }

  /** Open listeners (target) and sockets (source). */
  openCount(): number {
    let n = 0;
    for (const t of this.targets.values()) n += t.proxies.length;
    for (const s of this.sources.values()) n += s.proxies.length;
    return n;
  }

  /** Refuses new proxies and stops every open one. */
  async shutdown(): Promise<void> {
    this.shuttingDown = true;
    await Promise.all([...this.targets.keys()].map((k) => this.stopTarget(k)));
    await Promise.all([...this.sources.keys()].map((k) => this.stopSource(k)));
  }
}
