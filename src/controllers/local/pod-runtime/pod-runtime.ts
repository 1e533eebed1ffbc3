/**
 * The local pod runtime: a kubelet for nodes without one (local mode, tests against a real
 * API server). It runs each Pod bound to its node as a child process with the compute
 * container's command and environment, creates the pod's emptyDirs in kubelet's layout,
 * keeps Pod status (phase, container statuses), binds pending pods when told to (no
 * scheduler), and on deletion stops the process (SIGTERM, SIGKILL after the grace
 * period) and removes the pod. Processes run detached with pid files: a restarted
 * runtime adopts them, so guests are not restarted with it. What a pod's process is (argv,
 * environment) is container-command.ts.
 */
import type { Pod } from '../../common/pod';
import { ConflictError, NotFoundError } from '../../runtime/errors';
import { EventRecorder } from '../../runtime/event-recorder';
import { type Informer, SharedInformerFactory } from '../../runtime/informer';
import { objectKey, PodType } from '../../runtime/resources';
import type { KubeObject } from '../../runtime/types';
import { runKeyWorker, WorkQueue } from '../../runtime/workqueue';
import { containerArgv, containerEnv } from './container-command';
import { NodeStatusKeeper } from './node-status';
import { podDir, preparePodDirs, removePodDirs, terminationMessage } from './pod-dirs';
import { PodNetwork, type PodNetworkInfo } from './pod-network';
import { processEnv, startPodProbes } from './pod-probes';
import type { PodRuntimeOptions } from './pod-runtime-options';
import {
  containersReady,
  creatingStatus,
  runningStatus,
  terminatedStatus,
  withReadiness,
} from './pod-status';
import { materializeVolume } from './pod-volumes';
import {
  isAlive,
  killLeftInGroup,
  logTail,
  readProcessRecord,
  removeProcessRecord,
  signalGroup,
  signalMain,
  startProcess,
} from './processes';
import { graceSeconds, type Running, stopGracefully } from './running-pod';
import { secondaryAttachments } from './secondary-networks';

export { defaultCliEntry } from './container-command';
export type { PodRuntimeOptions } from './pod-runtime-options';

/** Retry of a pod whose volumes cannot be set up yet: 1 s, doubling up to 30 s. */
const MOUNT_RETRY_FIRST_MS = 1_000;
const MOUNT_RETRY_MAX_MS = 30_000;

/** Grace of a pod whose object vanished before its process stopped. */
const DEFAULT_GRACE_MS = 30_000;

/** Runs the pods of one node. */
export class PodRuntime {
  private readonly informers: SharedInformerFactory;
  private readonly pods: Informer<KubeObject>;
  private readonly unbound: Informer<KubeObject> | undefined;
  private readonly queue = new WorkQueue<string>();
  private readonly running = new Map<string, Running>();
  /** Pods whose volumes could not be set up: the last reason and how often it was tried. */
  private readonly mountFailures = new Map<string, { message: string; attempts: number }>();
  private readonly node: NodeStatusKeeper;
  private workers: Promise<void>[] = [];
  private poll: NodeJS.Timeout | undefined;
  private volumeSync: NodeJS.Timeout | undefined;
  private syncingVolumes = false;
  private readonly log: (m: string) => void;
  private readonly events: EventRecorder;
  private readonly network: PodNetwork | undefined;

  constructor(private readonly o: PodRuntimeOptions) {
    this.network = o.network ? new PodNetwork(o.network) : undefined;
    this.log = o.log ?? ((m) => process.stderr.write(`pod runtime ${o.nodeName}: ${m}\n`));
    this.events = new EventRecorder(o.client, { component: 'kubelet', host: o.nodeName }, (e) =>
      this.log(`event: ${e.message}`),
    );
    this.informers = new SharedInformerFactory(o.client);
    this.pods = this.informers.informerFor(PodType, { fieldSelector: `spec.nodeName=${o.nodeName}` });
    if (o.bindPending)
      this.unbound = this.informers.informerFor(PodType, { fieldSelector: 'spec.nodeName=' });
    const enqueue = (p: KubeObject) =>
      this.queue.add(`${p.metadata?.namespace}/${p.metadata?.name}/${p.metadata?.uid}`);
    for (const inf of [this.pods, this.unbound]) {
      inf?.addEventHandler({ onAdd: enqueue, onUpdate: (_a, b) => enqueue(b), onDelete: enqueue });
    }
    this.node = new NodeStatusKeeper({
      client: o.client,
      nodeName: o.nodeName,
      root: o.root,
      onWrite: (k) => o.onWrite?.(k, o.nodeName),
    });
  }

  /** Registers the node, adopts processes left by a previous runtime, starts watching pods. */
  async start(): Promise<void> {
    if (this.o.manageNode !== false) await this.node.start();
    this.informers.start();
    await this.informers.waitForCacheSync();
    for (let i = 0; i < 4; i++)
      this.workers.push(
        runKeyWorker(
          this.queue,
          (key) => this.reconcile(key),
          (key, err) => this.log(`${key}: ${err.message}`),
        ),
      );
    this.poll = setInterval(() => this.checkProcesses(), this.o.pollMs ?? 500);
    this.poll.unref?.();
    this.volumeSync = setInterval(() => void this.syncVolumes(), this.o.volumeSyncMs ?? 10_000);
    this.volumeSync.unref?.();
  }

  /** Stops watching; the processes keep running for the next runtime to adopt. */
  async stop(): Promise<void> {
    if (this.poll) clearInterval(this.poll);
    if (this.volumeSync) clearInterval(this.volumeSync);
    await this.node.stop();
    this.queue.shutDown();
    await Promise.all(this.workers);
    await this.informers.shutdown();
    for (const r of this.running.values()) if (r.killTimer) clearTimeout(r.killTimer);
  }

  /** Pid of a pod's process, if it runs (tests, diagnostics). */
  pidOf(podUid: string): number | undefined {
    const r = this.running.get(podUid);
    return r && isAlive(r.record) ? r.record.pid : undefined;
  }

  /** Network namespace path and IP of a pod, when the runtime gave it a network. */
  networkOf(podUid: string): PodNetworkInfo | undefined {
    return this.running.get(podUid)?.net;
  }

  /** Kills every process of this runtime at once (teardown of tests). */
  killAll(): void {
    for (const r of this.running.values()) signalGroup(r.record, 'SIGKILL');
  }

  /** Rewrites the API-backed volumes of running pods (writeAtomic skips unchanged ones). */
  private async syncVolumes(): Promise<void> {
    if (this.syncingVolumes) return;
    this.syncingVolumes = true;
    try {
      for (const obj of this.pods.indexer.list()) {
        const pod = obj as Pod;
        const uid = pod.metadata?.uid ?? '';
        const r = this.running.get(uid);
        if (!r || r.exited !== undefined || r.lost || pod.metadata?.deletionTimestamp) continue;
        for (const [i, v] of (pod.spec?.volumes ?? []).entries()) {
          if (!v.secret && !v.configMap && !v.downwardAPI) continue;
          await materializeVolume(this.o.client, podDir(this.o.root, uid), pod, v, i).catch((e) =>
            this.log(`Pod ${pod.metadata?.namespace}/${pod.metadata?.name}: resync: ${(e as Error).message}`),
          );
        }
      }
    } finally {
      this.syncingVolumes = false;
    }
  }

  private checkProcesses(): void {
    for (const [uid, r] of this.running) {
      if (r.exited === undefined && !r.exit && !r.lost && !isAlive(r.record)) {
        r.lost = true;
        r.probes?.stop();
        this.requeueUid(uid);
      }
    }
  }

  private requeueUid(uid: string): void {
    const pod = this.pods.indexer.list().find((p) => p.metadata?.uid === uid);
    if (pod) this.queue.add(`${pod.metadata?.namespace}/${pod.metadata?.name}/${uid}`);
  }

  private async reconcile(key: string): Promise<number | undefined> {
    const [namespace, name, uid] = key.split('/');
    const cacheKey = `${namespace}/${name}`;
    let pod = this.pods.indexer.get(cacheKey) as Pod | undefined;
    if (pod && pod.metadata?.uid !== uid) pod = undefined;
    if (!pod) {
      const pending = this.unbound?.indexer.get(cacheKey) as Pod | undefined;
      if (
        pending &&
        pending.metadata?.uid === uid &&
        !pending.spec?.nodeName &&
        !pending.metadata?.deletionTimestamp
      ) {
        await this.bind(pending);
        return undefined;
      }
      // Gone from the API: make sure nothing of it runs (in the background: it may take the grace period).
      void this.forget(uid, true);
      return undefined;
    }
    let r = this.running.get(uid);
    if (!r) {
      const rec = await readProcessRecord(podDir(this.o.root, uid));
      if (rec) {
        r = isAlive(rec) ? { record: rec } : { record: rec, lost: true };
        r.net = await this.network?.read(podDir(this.o.root, uid));
        this.running.set(uid, r);
        if (r.lost) this.log(`${cacheKey}: its process ${rec.pid} ended while the runtime was down`);
        else {
          this.log(`${cacheKey}: adopted process ${rec.pid}`);
          // An adopted container's environment is the one it was started with.
          if (!pod.metadata?.deletionTimestamp) this.startProbes(pod, r, processEnv(rec.pid));
        }
      }
    }
    if (pod.metadata?.deletionTimestamp) return this.terminate(pod, r);
    const phase = pod.status?.phase;
    if (phase === 'Succeeded' || phase === 'Failed') return undefined;
    if (!r) return this.startPod(pod);
    const done = r.exited !== undefined || r.lost;
    if (done) {
      // The kubelet's order: the termination message file, else (failed) the log's tail.
      const dir = podDir(this.o.root, uid);
      const message = (await terminationMessage(dir)) || (r.exited ? await logTail(dir) : '');
      await this.writeStatus(pod, terminatedStatus(pod, r.exited, r.record.startedAt, message));
      return undefined;
    }
    if (phase !== 'Running') {
      await this.writeStatus(pod, runningStatus(pod, r.record, r.net?.ip, r.probes?.ready ?? true));
    } else if (r.probes && containersReady(pod) !== r.probes.ready) {
      await this.writeStatus(pod, withReadiness(pod, r.probes.ready));
    }
    return undefined;
  }

  /** Starts the compute container's probes (pod-probes.ts), with this runtime's reactions. */
  private startProbes(pod: Pod, r: Running, env: NodeJS.ProcessEnv): void {
    const uid = pod.metadata?.uid ?? '';
    r.probes = startPodProbes(
      pod,
      { startedAt: r.record.startedAt, net: r.net, env, commands: this.o.commands },
      {
        events: this.events,
        requeue: () => this.requeueUid(uid),
        kill: () => {
          if (isAlive(r.record)) stopGracefully(r, (pod.spec?.terminationGracePeriodSeconds ?? 30) * 1000);
        },
      },
    );
  }

  private async bind(pod: Pod): Promise<void> {
    await this.o.client.update(PodType, {
      ...pod,
      spec: { ...pod.spec, nodeName: this.o.nodeName },
    } as KubeObject);
    this.o.onWrite?.('Pod', pod.metadata?.name ?? '');
  }

  /** Starts the pod's process; returns ms to try again when its volumes are not ready. */
  private async startPod(pod: Pod): Promise<number | undefined> {
    const uid = pod.metadata?.uid ?? '';
    const key = objectKey(pod as KubeObject);
    let argv: string[];
    let mounts: Record<string, string>;
    try {
      argv = containerArgv(pod, this.o.commands);
    } catch (err) {
      await this.writeStatus(pod, {
        phase: 'Failed',
        reason: 'CreateContainerError',
        message: (err as Error).message,
      });
      return;
    }
    try {
      mounts = await preparePodDirs(this.o.root, pod, this.o.client, this.o.csi);
    } catch (err) {
      // A volume that cannot be set up yet (a configMap or claim applied after the VM, an
      // unbound claim, a bad key) keeps the pod Pending in ContainerCreating and is retried
      // with backoff, as kubelet's volume manager does; each new reason is a FailedMount event.
      const message = (err as Error).message;
      const prior = this.mountFailures.get(uid);
      const attempts = (prior?.attempts ?? 0) + 1;
      this.mountFailures.set(uid, { message, attempts });
      if (prior?.message !== message) {
        this.events.event(
          { apiVersion: 'v1', kind: 'Pod', ...pod } as KubeObject,
          'Warning',
          'FailedMount',
          message,
        );
      }
      const waiting = pod.status?.containerStatuses?.find((c) => c.name === 'compute')?.state?.waiting;
      if (pod.status?.phase !== 'Pending' || waiting?.reason !== 'ContainerCreating') {
        await this.writeStatus(pod, creatingStatus(pod));
      }
      return Math.min(MOUNT_RETRY_MAX_MS, MOUNT_RETRY_FIRST_MS * 2 ** (attempts - 1));
    }
    this.mountFailures.delete(uid);
    let net: PodNetworkInfo | undefined;
    if (this.network && !pod.spec?.hostNetwork) {
      try {
        const secondary = await secondaryAttachments(pod, this.o.client);
        net = await this.network.setUp(uid, podDir(this.o.root, uid), secondary);
      } catch (err) {
        // As kubelet: the sandbox could not be made; an event, then a retry (setUp cleaned up).
        this.events.event(
          { apiVersion: 'v1', kind: 'Pod', ...pod } as KubeObject,
          'Warning',
          'FailedCreatePodSandBox',
          `Failed to create pod sandbox: ${(err as Error).message}`,
        );
        if (pod.status?.phase !== 'Pending') await this.writeStatus(pod, creatingStatus(pod));
        return MOUNT_RETRY_MAX_MS;
      }
      // The container's process lives in the pod's network namespace (nsenter switches only that).
      argv = ['nsenter', `--net=${net.netns}`, '--', ...argv];
    }
    const env = containerEnv(pod, this.o.env, mounts);
    const started = await startProcess(podDir(this.o.root, uid), argv, env);
    const r: Running = { record: started.record, exit: started.exit, net };
    this.running.set(uid, r);
    this.startProbes(pod, r, env);
    this.log(`${key}: started process ${started.record.pid}`);
    void started.exit.then(async (code) => {
      r.exited = code;
      killLeftInGroup(started.record);
      r.probes?.stop();
      if (r.killTimer) clearTimeout(r.killTimer);
      r.exit = undefined;
      const tail = `: ${await logTail(podDir(this.o.root, uid), 1500)}`;
      this.log(`${key}: process ${started.record.pid} exited with ${code}${tail}`);
      this.requeueUid(uid);
    });
    await this.writeStatus(pod, runningStatus(pod, started.record, net?.ip, r.probes?.ready ?? true));
  }

  /** Stops a deleted pod's process (SIGTERM, SIGKILL after its grace), then removes the pod object. */
  private async terminate(pod: Pod, r: Running | undefined): Promise<number | undefined> {
    const uid = pod.metadata?.uid ?? '';
    r?.probes?.stop();
    if (r && r.exited === undefined && !r.lost && isAlive(r.record)) {
      stopGracefully(r, graceSeconds(pod) * 1000);
      return 500;
    }
    try {
      await this.o.client.delete(PodType, pod.metadata?.name ?? '', {
        namespace: pod.metadata?.namespace,
        gracePeriodSeconds: 0,
        preconditions: { uid },
      });
      this.o.onWrite?.('Pod', pod.metadata?.name ?? '');
    } catch (err) {
      if (!(err instanceof NotFoundError || err instanceof ConflictError)) throw err;
    }
    await this.forget(uid, false);
    return undefined;
  }

  /**
   * Drops a pod: with `stop`, a process still running gets SIGTERM (as for a deleted pod
   * whose object is already gone) and SIGKILL after the default grace; its directories go
   * once it has exited.
   */
  private async forget(uid: string, stop: boolean): Promise<void> {
    const r = this.running.get(uid);
    this.running.delete(uid);
    this.mountFailures.delete(uid);
    r?.probes?.stop();
    if (r?.killTimer) clearTimeout(r.killTimer);
    if (!uid) return;
    if (r && stop && r.exited === undefined && isAlive(r.record)) {
      signalMain(r.record, 'SIGTERM');
      const kill = setTimeout(() => signalGroup(r.record, 'SIGKILL'), DEFAULT_GRACE_MS);
      kill.unref?.();
      const deadline = Date.now() + DEFAULT_GRACE_MS + 5_000;
      while (isAlive(r.record) && Date.now() < deadline) await new Promise((res) => setTimeout(res, 200));
      clearTimeout(kill);
    }
    try {
      await this.network
        ?.tearDown(uid, podDir(this.o.root, uid))
        .catch((e: Error) => this.log(`pod ${uid}: network teardown: ${e.message}`));
      await removeProcessRecord(podDir(this.o.root, uid));
      // Its CSI volumes first: the removal is recursive and must not reach a volume's files
      // (a failure keeps the directory; the log says why).
      await this.o.csi?.unpublishAll(podDir(this.o.root, uid)).catch((e: Error) => {
        this.log(`pod ${uid}: CSI volumes: ${e.message}; its directory is kept`);
        throw e;
      });
      await removePodDirs(this.o.root, uid);
    } catch {
      // A uid that is not a plain token has no directory of ours.
    }
  }

  private async writeStatus(pod: Pod, status: Pod['status']): Promise<void> {
    try {
      await this.o.client.updateStatus(PodType, { ...pod, status } as KubeObject);
      this.o.onWrite?.('Pod', pod.metadata?.name ?? '');
    } catch (err) {
      if (err instanceof NotFoundError) return;
      throw err;
    }
  }
}
