/**
 * bench:migration's timeline of one migration, in ms after the bench created the
 * VirtualMachineInstanceMigration: where the time over the bare `virsh migrate` goes.
 * The API's own timestamps are whole seconds, so the bench watches the objects itself
 * ({@link MigrationWatch}: the first time each fact of the migration, its VMI's
 * `migrationState` and the target pod was seen, over a watch, stamped on arrival), and
 * adds the CRI log stamps of the lines the launcher pods and the KubeVirt components of
 * both nodes wrote about the VM, and, with the cluster's `traceLogs`, the kubelet's and
 * containerd's lines about the target pod (./cluster-timeline.ts reads those logs).
 */
import { join } from 'node:path';
import { type KubeConfig, Watch } from '@kubernetes/client-node';
import { containerdLines, kubeletLines, type Line, podLogs } from './cluster-timeline';

const MAX_TEXT = 170;

/** A Kubernetes object as the watch delivers it (only what the facts read). */
interface Obj {
  metadata?: {
    name?: string;
    uid?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    finalizers?: string[];
    deletionTimestamp?: string;
  };
  spec?: { nodeName?: string };
  status?: Record<string, unknown>;
}

interface ContainerStatus {
  name: string;
  ready?: boolean;
  started?: boolean;
  state?: { running?: unknown; terminated?: { reason?: string }; waiting?: { reason?: string } };
}

/** The facts of a migration object worth a line, as short texts (each reported once). */
export function migrationFacts(m: Obj): string[] {
  const out: string[] = [];
  if (m.metadata?.finalizers?.length) out.push('VMIM finalizer set');
  const phase = m.status?.phase;
  if (typeof phase === 'string' && phase) out.push(`VMIM ${phase}`);
  return out;
}

/** The facts of the VMI: its migration state's fields as they appear, and its node. */
export function vmiFacts(v: Obj): string[] {
  const out: string[] = [];
  const st = (v.status ?? {}) as { nodeName?: string; migrationState?: Record<string, unknown> };
  if (st.nodeName) out.push(`VMI nodeName=${st.nodeName}`);
  const ms = st.migrationState ?? {};
  if (ms.migrationUid && !ms.completed)
    out.push(`VMI migrationState ${String(ms.migrationUid).slice(0, 8)} set`);
  for (const k of [
    'targetNodeAddress',
    'targetNodeDomainDetected',
    'startTimestamp',
    'endTimestamp',
    'targetNodeDomainReadyTimestamp',
    'completed',
    'failed',
    'abortRequested',
  ]) {
    if (ms[k] !== undefined && ms[k] !== false)
      out.push(`VMI migrationState.${k} (${String(ms.migrationUid).slice(0, 8)})`);
  }
  return out;
}

/** The facts of a launcher pod: node, conditions, each container's state. */
export function podFacts(p: Obj): string[] {
  const name = p.metadata?.name ?? '';
  const out: string[] = [`pod ${name} seen`];
  if (p.spec?.nodeName) out.push(`pod ${name} bound to ${p.spec.nodeName}`);
  const st = (p.status ?? {}) as {
    phase?: string;
    conditions?: { type: string; status: string }[];
    initContainerStatuses?: ContainerStatus[];
    containerStatuses?: ContainerStatus[];
  };
  if (st.phase) out.push(`pod ${name} phase ${st.phase}`);
  for (const c of st.conditions ?? []) out.push(`pod ${name} ${c.type}=${c.status}`);
  const containers = (kind: string, list?: ContainerStatus[]) => {
    for (const c of list ?? []) {
      const s = c.state ?? {};
      if (s.waiting?.reason) out.push(`pod ${name} ${kind} ${c.name} waiting ${s.waiting.reason}`);
      if (s.running) out.push(`pod ${name} ${kind} ${c.name} running`);
      if (s.terminated) out.push(`pod ${name} ${kind} ${c.name} terminated ${s.terminated.reason ?? ''}`);
      if (c.ready) out.push(`pod ${name} ${kind} ${c.name} ready`);
    }
  };
  containers('init', st.initContainerStatuses);
  containers('container', st.containerStatuses);
  const ann = p.metadata?.annotations ?? {};
  if (ann['kubevirt-ts.io/migration-target-domain']) out.push(`pod ${name} target domain XML published`);
  if (p.metadata?.deletionTimestamp) out.push(`pod ${name} deleting`);
  return out;
}

/**
 * Watches a namespace's migrations, VMIs and pods and stamps each fact when an object
 * first shows it (a fact an object loses and shows again is stamped again: the VMI's node
 * goes back and forth). `start()` before the migration is created, `lines(t0)` after,
 * `stop()` at the end.
 */
export class MigrationWatch {
  private readonly last = new Map<string, Set<string>>();
  private readonly events: Line[] = [];
  private readonly aborts: AbortController[] = [];

  constructor(
    private readonly kc: KubeConfig,
    private readonly namespace: string,
  ) {}

  private note(key: string, facts: string[]): void {
    const now = Date.now();
    const before = this.last.get(key) ?? new Set<string>();
    for (const f of facts) if (!before.has(f)) this.events.push({ at: now, source: 'watch', text: f });
    this.last.set(key, new Set(facts));
  }

  /** Starts the three watches (the objects that exist are listed first). */
  async start(): Promise<void> {
    const w = new Watch(this.kc);
    const ns = this.namespace;
    const paths: [string, (o: Obj) => string[]][] = [
      [`/apis/kubevirt.io/v1/namespaces/${ns}/virtualmachineinstancemigrations`, migrationFacts],
      [`/apis/kubevirt.io/v1/namespaces/${ns}/virtualmachineinstances`, vmiFacts],
      [`/api/v1/namespaces/${ns}/pods`, podFacts],
    ];
    for (const [path, facts] of paths) {
      this.aborts.push(
        await w.watch(
          path,
          {},
          (type, obj: Obj) => {
            const key = `${path} ${obj.metadata?.uid}`;
            this.note(key, type === 'DELETED' ? [`${obj.metadata?.name} deleted`] : facts(obj));
          },
          () => undefined,
        ),
      );
    }
  }

  /** What was seen since `t0`, as timeline lines. */
  lines(t0: number): Line[] {
    return this.events.filter((e) => e.at >= t0);
  }

  stop(): void {
    for (const a of this.aborts) a.abort();
  }
}

/** What the log part of the timeline reads. */
export interface MigrationLogs {
  /** The first node's cluster state directory. */
  stateDir: string;
  /** Node names with their state directories (the first node's is `stateDir`). */
  nodes: { name: string; dir: string }[];
  vmName: string;
  /** The target pod's name (its kubelet's and containerd's lines). */
  targetPod: string;
  targetNode: string;
}

/** The CRI log lines of both launcher pods and the components' lines about the VM, from every node. */
export function migrationLogLines(o: MigrationLogs): Line[] {
  const out: Line[] = [];
  const vm = o.vmName;
  for (const n of o.nodes) {
    const tag = (l: Line) => ({ ...l, source: `${n.name} ${l.source}` });
    out.push(
      ...podLogs(
        n.dir,
        (d) => d.includes(`_virt-launcher-${vm}-`),
        () => true,
      ).map(tag),
      ...podLogs(
        n.dir,
        (d) => d.startsWith('kubevirt_'),
        (t) => t.includes(`"${vm}"`) || t.includes(`/${vm}`) || t.includes(`_${vm}`),
      ).map(tag),
    );
    if (n.name === o.targetNode) {
      out.push(...containerdLines(n.dir, o.targetPod).map(tag));
      out.push(...kubeletLines(n.dir, o.targetPod, new Date().getUTCFullYear()).map(tag));
    }
  }
  return out;
}

/** The node directories of a cluster brought up in `stateDir` (./scripts/cluster/extra-node.ts's layout). */
export function nodeDirs(stateDir: string, first: string, extra: string[]): { name: string; dir: string }[] {
  return [
    { name: first, dir: stateDir },
    ...extra.map((name) => ({ name, dir: join(stateDir, 'nodes', name) })),
  ];
}

/** The timeline's lines between `t0` and `end` (+1.5 s), in order, ready to print. */
export function formatTimeline(lines: Line[], t0: number, end: number): string[] {
  const rel = (ms: number) => `+${String(Math.round(ms - t0)).padStart(6)} ms`;
  const own = (l: Line) => (l.own === undefined ? '' : `[own +${Math.round(l.own - t0)} ms] `);
  return lines
    .filter((l) => Number.isFinite(l.at) && l.at >= t0 - 200 && l.at <= end + 1_500)
    .sort((a, b) => a.at - b.at)
    .map((l) => `${rel(l.at)}  ${l.source.padEnd(34)} ${own(l)}${l.text.slice(0, MAX_TEXT)}`);
}
