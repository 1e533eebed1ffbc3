/**
 * virt-handler, the node agent: watches the VMIs bound to its node and their launcher
 * pods, drives each launcher over its socket (sync, shutdown on deletion, delete once the
 * guest is gone), and writes VMI status from what the launcher reports, only when it
 * changes. A restarted handler re-reads the world and adopts running launchers (a sync of
 * a running domain is a no-op); a launcher that stops answering fails its VMI.
 */
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { VirtualMachineInstance } from '../../api/generated/types';
import type { Pod } from '../common/pod';
import { VmiResource } from '../common/vmi-resource';
import { type DomainEventNotification, type NotifyServer, serveNotify } from '../launcher-protocol';
import type { LauncherDomain } from '../launcher-protocol/domain-report';
import { MIGRATION_TARGET_XML } from '../launcher-protocol/paths';
import { vmiFields } from '../logging/logger';
import type { StatsTarget } from '../metrics/handler-metrics';
import { NotFoundError } from '../runtime/errors';
import { EventRecorder } from '../runtime/event-recorder';
import type { Informer, SharedInformerFactory } from '../runtime/informer';
import { objectKey } from '../runtime/resources';
import type { KubeObject } from '../runtime/types';
import { runKeyWorker, WorkQueue } from '../runtime/workqueue';
import type { DevicePlugin } from './device-plugin/device-plugin';
import { domainEventVmi } from './domain-event';
import type { VirtHandlerOptions } from './handler-options';

export type { VirtHandlerOptions } from './handler-options';

import { sameJson } from '../runtime/same-json';
import { GuestShutdown } from './guest-shutdown';
import { type BlockHotplug, nodeBlockHotplug } from './hotplug-block';
import { HotplugMounts } from './hotplug-mounts';
import { LauncherCalls } from './launcher-calls';
import { LauncherConnections } from './launcher-connections';
import { launcherPodDown, launcherPodOf } from './launcher-pod';
import { LauncherPodSetup } from './launcher-pod-setup';
import { MigrationSync, migrationInFlight, migrationRole } from './migration-sync';
import { BY_CREATOR, nodeInformers } from './node-informers';
import type { NodeRegistrar } from './node-registrar';
import { setUpNode } from './node-setup';
import { removeOrphanDomain } from './orphan-domain';
import { type RunningSteps, runningSteps, withRunningSteps } from './running-steps';
import { statsTargets } from './stats-targets';
import { launcherEvent, phaseEvents, recordVmiEvent, type VmiEvent } from './vmi-events';
import { type LauncherView, nextHandlerStatus } from './vmi-status';

const stamp = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z');
const FINAL = new Set(['Succeeded', 'Failed']);

/** A VMI this handler does not know (not on its node, or not yet seen). */
export class VmiNotOnNodeError extends Error {}

/** The node agent. `start()`, then `stop()`. */
export class VirtHandler {
  private readonly informers: SharedInformerFactory;
  private readonly podInformers: SharedInformerFactory;
  private readonly vmis: Informer<KubeObject>;
  private readonly pods: Informer<KubeObject>;
  /** VMIs migrating to this node (upstream's migration target informer). */
  private readonly targets: Informer<KubeObject>;
  private readonly migration: MigrationSync;
  private readonly queue = new WorkQueue<string>();
  private readonly conns: LauncherConnections;
  private readonly podSetup: LauncherPodSetup;
  /** Hotplugged volumes' mounts into launcher pods (./hotplug-mounts). */
  private readonly mounts: HotplugMounts;
  /** Hotplugged block-mode claims' devices (./hotplug-block): on a kubelet node only. */
  private readonly block: BlockHotplug | undefined;
  private registrar: NodeRegistrar | undefined;
  private devicePlugins: DevicePlugin[] = [];
  private notify: NotifyServer | undefined;
  private workers: Promise<void>[] = [];
  private resync: NodeJS.Timeout | undefined;
  /** Last domain each VMI's launcher reported, by VMI uid (outlives the launcher). */
  private readonly lastDomain = new Map<string, LauncherDomain>();
  /** Calls on the launchers, with consecutive failures by VMI uid. */
  private readonly calls: LauncherCalls;
  /** Final VMIs whose launcher and domain are already dealt with. */
  private readonly collected = new Set<string>();
  private readonly log: (m: string) => void;
  private readonly recorder: EventRecorder;
  /** Deleted VMIs' guests: shutdown, kill, the launcher told to drop the domain (./guest-shutdown). */
  private readonly shutdown: GuestShutdown;
  private labels: Record<string, string> = {};
  private resources: Record<string, string> = {};

  constructor(private readonly o: VirtHandlerOptions) {
    const logger = o.logger;
    this.log = logger
      ? (m) => logger.info({ node: o.nodeName }, m)
      : (o.log ?? ((m) => process.stderr.write(`virt-handler ${o.nodeName}: ${m}\n`)));
    this.recorder = new EventRecorder(o.client, { component: 'virt-handler', host: o.nodeName }, (e) =>
      this.log(`event: ${e.message}`),
    );
    const w = nodeInformers(o.client, o.nodeName);
    this.informers = w.informers;
    this.podInformers = w.podInformers;
    this.vmis = w.vmis;
    this.targets = w.targets;
    this.pods = w.pods;
    this.mounts = new HotplugMounts({ podsRoot: o.podsRoot });
    this.block = nodeBlockHotplug(
      o,
      (uid) => this.pods.indexer.list().find((p) => p.metadata?.uid === uid) as Pod,
    );
    this.podSetup = new LauncherPodSetup({ podsRoot: o.podsRoot, netnsOf: o.podNetns, procRoot: o.procRoot });
    this.conns = new LauncherConnections(o.podsRoot, o.notifySocket, o.launcherTimeoutMs);
    this.calls = new LauncherCalls(this.conns);
    this.shutdown = new GuestShutdown({ calls: this.calls, record: (vmi, e) => this.record(vmi, e) });
    const enqueue = (obj: KubeObject) => this.queue.add(objectKey(obj));
    this.vmis.addEventHandler({ onAdd: enqueue, onUpdate: (_a, b) => enqueue(b), onDelete: enqueue });
    this.targets.addEventHandler({ onAdd: enqueue, onUpdate: (_a, b) => enqueue(b), onDelete: enqueue });
    this.migration = new MigrationSync({
      nodeName: o.nodeName,
      client: o.client,
      podsOf: (uid) => this.pods.indexer.byIndex(BY_CREATOR, uid) as Pod[],
      launcherReady: (podUid) => this.conns.socketExists(podUid),
      launcher: (podUid) => this.conns.get(podUid),
      dropLauncher: (podUid) => this.conns.drop(podUid),
      readTargetXml: (podUid) =>
        readFile(join(dirname(this.conns.socketPath(podUid)), MIGRATION_TARGET_XML), 'utf8').catch(
          () => undefined,
        ),
      write: (old, next) => this.write(old, next),
      migrationAddress: o.migrationAddress,
      migrationConfig: o.migrationConfig,
      proxy: o.migrationProxy,
      prepareTargetPod: (vmi, pod) => this.podSetup.ensure(vmi, pod),
      now: () => new Date(),
      log: (m) => this.log(m),
    });
    const podToVmi = (p: KubeObject) => {
      const owner = p.metadata?.ownerReferences?.find((r) => r.kind === 'VirtualMachineInstance');
      if (owner) this.queue.add(`${p.metadata?.namespace}/${owner.name}`);
    };
    this.pods.addEventHandler({ onAdd: podToVmi, onUpdate: (_a, b) => podToVmi(b), onDelete: podToVmi });
  }

  /** The node's labels and device resources as last registered. */
  get nodeLabels(): Record<string, string> {
    return { ...this.labels };
  }
  get nodeResources(): Record<string, string> {
    return { ...this.resources };
  }

  /** Whether the handler has started (informers synced, notify socket served) and not stopped. */
  isReady(): boolean {
    return this.notify !== undefined && !this.queue.isShuttingDown();
  }

  /** The VMIs running here with a launcher to ask for domain stats (metrics); see stats-targets.ts. */
  statsTargets(): StatsTarget[] {
    const vmis = this.vmis.indexer.list() as VirtualMachineInstance[];
    return statsTargets(vmis, this.o.nodeName, (v) => this.podOf(v), this.conns);
  }

  /** Probes the host, registers the Node, serves the notify socket, starts watching. */
  async start(): Promise<void> {
    const node = await setUpNode(this.o, this.log);
    this.labels = node.labels;
    this.resources = node.resources;
    this.devicePlugins = node.devicePlugins;
    this.registrar = node.registrar;
    this.notify = await serveNotify(this.o.notifySocket, {
      onDomainEvent: (ev) => this.onDomainEvent(ev),
      onK8sEvent: (ev) => this.onLauncherEvent(ev),
    });
    this.informers.start();
    this.podInformers.start();
    await this.informers.waitForCacheSync();
    await this.podInformers.waitForCacheSync();
    for (let i = 0; i < (this.o.workers ?? 4); i++)
      this.workers.push(
        runKeyWorker(
          this.queue,
          (key) => this.reconcile(key),
          (key, err) => this.logVmi(key, 'error', err.message),
        ),
      );
    const every = this.o.resyncMs ?? 5_000;
    this.resync = setInterval(() => {
      for (const v of this.vmis.indexer.list()) this.queue.add(objectKey(v));
      for (const v of this.targets.indexer.list()) this.queue.add(objectKey(v));
    }, every);
    this.resync.unref?.();
  }

  /** Stops watching; launchers and guests keep running (a new handler adopts them). */
  async stop(): Promise<void> {
    if (this.resync) clearInterval(this.resync);
    await this.registrar?.stop();
    await Promise.all(this.devicePlugins.map((p) => p.stop()));
    this.queue.shutDown();
    await Promise.all(this.workers);
    await this.informers.shutdown();
    await this.podInformers.shutdown();
    await this.notify?.close();
    await this.conns.closeAll();
    await this.recorder.flush();
  }

  /** A line about the VMI `key`: structured with its fields when a logger is set. */
  private logVmi(key: string, level: 'warn' | 'error', message: string): void {
    const logger = this.o.logger;
    if (!logger) {
      this.log(`${key}: ${message}`);
      return;
    }
    const [namespace, name] = key.split('/');
    const vmi = this.vmi(key);
    logger[level]({ ...vmiFields(vmi ?? { metadata: { namespace, name } }), node: this.o.nodeName }, message);
  }

  private record(vmi: VirtualMachineInstance, e: VmiEvent): void {
    recordVmiEvent(this.recorder, this.o.logger?.child({ node: this.o.nodeName }), vmi, e);
  }

  /** A launcher's HandleK8sEvent: recorded on its VMI (only its own). */
  private onLauncherEvent(raw: unknown): void {
    const r = launcherEvent(raw, (ns, name) => this.vmi(`${ns}/${name}`));
    if ('error' in r) throw new Error(`launcher event refused: ${r.error}`);
    this.record(r.vmi, r.event);
  }

  private onDomainEvent(ev: DomainEventNotification): void {
    const about = domainEventVmi(ev);
    if (!about) return;
    if (about.domain.vmiUid) this.lastDomain.set(about.domain.vmiUid, about.domain);
    this.o.logger?.debug(
      { namespace: about.namespace, name: about.name, node: this.o.nodeName },
      about.summary,
    );
    this.queue.add(`${about.namespace}/${about.name}`);
  }

  private vmi(key: string): VirtualMachineInstance | undefined {
    return (this.vmis.indexer.get(key) ?? this.targets.indexer.get(key)) as
      | VirtualMachineInstance
      | undefined;
  }

  private podOf(vmi: VirtualMachineInstance): Pod | undefined {
    return launcherPodOf(
      this.pods.indexer.byIndex(BY_CREATOR, vmi.metadata?.uid ?? '') as Pod[],
      vmi,
      this.o.nodeName,
    );
  }

  /** One VMI. Returns ms to look again, or undefined. */
  async reconcile(key: string): Promise<number | undefined> {
    const vmi = this.vmi(key);
    if (!vmi) return undefined;
    const uid = vmi.metadata?.uid ?? '';
    const st = vmi.status ?? {};
    const role = migrationRole(vmi, this.o.nodeName);
    if (role === 'target') return this.migration.syncTarget(vmi);
    await this.migration.releaseProxiesIfDone(vmi);
    if (st.nodeName !== this.o.nodeName) return undefined;
    const phase = st.phase ?? '';
    const pod = this.podOf(vmi);
    const podUid = pod?.metadata?.uid;

    if (FINAL.has(phase)) {
      if (this.collected.has(uid)) return undefined;
      // The guest is over: tell its launcher to forget the domain and exit.
      const told =
        podUid && this.conns.socketExists(podUid) ? await this.shutdown.signalDeletion(vmi, podUid) : false;
      // No launcher to tell: remove what a dead one may have left running.
      if (!told && this.lastDomain.get(uid)?.finished !== true) await this.removeOrphan(vmi);
      if (podUid) await this.conns.drop(podUid);
      // Hotplugged disks mounted into its pod would keep the kubelet from removing the pod;
      // the pod may already be gone from the informer (a deleted VM), its uid still in
      // activePods.
      const onNode = Object.entries(st.activePods ?? {}).filter(([, n]) => n === this.o.nodeName);
      for (const u of new Set([...(podUid ? [podUid] : []), ...onNode.map(([u]) => u)]))
        await this.mounts
          .unmountAll(u)
          .catch((e) => this.logVmi(key, 'warn', `hotplug unmount: ${e.message}`));
      this.lastDomain.delete(uid);
      this.calls.forget(uid);
      this.shutdown.forget(uid);
      this.collected.add(uid);
      return undefined;
    }
    if (phase !== 'Scheduled' && phase !== 'Running') return undefined;

    const podDown = launcherPodDown(pod);
    if (!podUid || (!this.conns.socketExists(podUid) && !podDown)) {
      // The launcher is still starting.
      return 100;
    }

    const got = podDown
      ? ({ ok: false, error: new Error('launcher pod is not running') } as const)
      : await this.calls.call(podUid, uid, (c) => c.getDomain() as Promise<LauncherDomain | undefined>);
    let view: LauncherView;
    let running: RunningSteps | undefined;
    let again: number | undefined;
    let applyMigration: ((next: VirtualMachineInstance) => VirtualMachineInstance) | undefined;
    if (!got.ok) {
      const n = this.calls.failuresOf(uid) ?? 1;
      if (!podDown && n < 3) return 1_000;
      view = {
        kind: 'gone',
        lastDomain: this.lastDomain.get(uid),
        why: `virt-launcher is gone: ${got.error.message}`,
      };
      await this.removeOrphan(vmi);
    } else {
      let domain = got.value;
      if (domain) this.lastDomain.set(uid, domain);
      if (role === 'source') {
        const step = await this.migration.syncSource(vmi, domain, podUid);
        if (step.handled) return step.again;
        applyMigration = step.apply;
      }
      const deleting = vmi.metadata?.deletionTimestamp !== undefined;
      // The source's domain is its migration's alone (migrationInFlight): no syncs.
      const busy = role === 'source' && migrationInFlight(vmi);
      if (deleting) {
        if (domain && !domain.finished) return this.shutdown.shutDown(vmi, podUid);
        // upstream's processVmDelete: the guest is down, so the launcher drops the domain now.
        if (domain?.finished) await this.shutdown.signalDeletion(vmi, podUid);
      } else if (!busy && (!domain || (!domain.finished && domain.state === 'shutoff'))) {
        const setupError = pod ? await this.podSetup.ensure(vmi, pod) : undefined;
        if (setupError) {
          this.log(`${key}: ${setupError}`);
          return 2_000;
        }
        const synced = await this.calls.call(podUid, uid, (c) => c.syncVirtualMachine(vmi));
        if (!synced.ok) {
          this.logVmi(key, 'warn', `sync: ${synced.error.message}`);
          return 2_000;
        }
        const again = await this.calls.call(
          podUid,
          uid,
          (c) => c.getDomain() as Promise<LauncherDomain | undefined>,
        );
        domain = again.ok ? again.value : domain;
        if (domain) this.lastDomain.set(uid, domain);
      }
      if (!deleting && !busy && domain && !domain.finished && domain.state !== 'shutoff') {
        // Live changes: hotplugged volumes, memory dumps, CPU and memory (./running-steps).
        running = await runningSteps(vmi, podUid, domain, {
          nodeName: this.o.nodeName,
          mounts: this.mounts,
          block: this.block,
          calls: this.calls,
          warn: (m) => this.logVmi(key, 'warn', m),
        });
        if (running.domain) {
          domain = running.domain;
          this.lastDomain.set(uid, domain);
        }
        again = running.again;
      }
      if (deleting && !domain) {
        view = {
          kind: 'gone',
          lastDomain: { ...(this.lastDomain.get(uid) as LauncherDomain), finished: true },
          why: 'deleted',
        };
      } else {
        view = { kind: 'domain', domain };
      }
    }
    const next = withRunningSteps(vmi, nextHandlerStatus(vmi, view, stamp()), running);
    await this.write(vmi, applyMigration ? applyMigration(next) : next);
    return again;
  }

  private async removeOrphan(vmi: VirtualMachineInstance): Promise<void> {
    if (this.o.orphanDriver) await removeOrphanDomain(vmi, this.o.orphanDriver, this.log);
  }

  private async write(old: VirtualMachineInstance, next: VirtualMachineInstance): Promise<void> {
    if (sameJson(old.status, next.status)) return;
    try {
      await this.o.client.update(VmiResource, next as never);
      this.o.onWrite?.('VirtualMachineInstance', old.metadata?.name ?? '');
      for (const e of phaseEvents(old, next)) this.record(next, e);
    } catch (err) {
      if (err instanceof NotFoundError) return;
      throw err;
    }
  }

  /**
   * The launcher of a VMI on this node: its client and the pod's sockets directory (where
   * the console and VNC sockets are). For the node's REST server and local mode.
   */
  async launcherOf(namespace: string, name: string) {
    const vmi = this.vmi(`${namespace}/${name}`);
    if (!vmi)
      throw new VmiNotOnNodeError(
        `VirtualMachineInstance ${namespace}/${name} is not on node ${this.o.nodeName}`,
      );
    const podUid = this.podOf(vmi)?.metadata?.uid;
    if (!podUid || !this.conns.socketExists(podUid)) {
      throw new Error(`VirtualMachineInstance ${namespace}/${name}: its launcher is not running`);
    }
    return { vmi, client: await this.conns.get(podUid), socketsDir: dirname(this.conns.socketPath(podUid)) };
  }

  /** Queues the VMI for a sync now (after an operation whose effect its status shows). */
  requeue(namespace: string, name: string): void {
    this.queue.add(`${namespace}/${name}`);
  }
}
