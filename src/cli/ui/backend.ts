/**
 * What the web console does to KubeVirt, on a virtctl {@link Target}: local mode (its
 * store socket and local subresource API) or a cluster through a kubeconfig (the user's
 * own credentials, held here and never sent to the browser). Every operation is one the
 * UI needs; there is no generic pass-through, so the browser cannot reach anything else.
 * Lifecycle verbs go the way virtctl's go (the VM subresources on a cluster, the same
 * direct change in local mode); the node verbs are the VMI's `subresources.kubevirt.io`.
 */
import { readFile } from 'node:fs/promises';
import { connect } from 'node:net';
import type { Duplex } from 'node:stream';
import { createClusterConfig, mergeConfiguration } from '../../api/config/cluster-config';
import type { VirtualMachine } from '../../api/generated/types';
import { type ApiObject, admit } from '../../api/validation/admission';
import { ApiError, InvalidError } from '../../controllers/runtime/errors';
import {
  DataVolumeType,
  EventType,
  NamespaceType,
  VirtualMachineClusterInstancetypeType,
  VirtualMachineClusterPreferenceType,
  VirtualMachineInstanceMigrationType,
  VirtualMachineInstanceType,
  VirtualMachineInstancetypeType,
  VirtualMachinePreferenceType,
  VirtualMachineType,
} from '../../controllers/runtime/resources';
import { VirtualMachineSnapshotType } from '../../controllers/runtime/storage-resources';
import type { KubeObject, ResourceType, WatchEvent, WatchHandle } from '../../controllers/runtime/types';
import { lifecycle } from '../commands/virtctl/lifecycle';
import type { Target } from '../commands/virtctl/target';
import { storedKubeVirt } from '../local/apply';
import { ImageNotFoundError, ImageStore } from '../local/images';
import { localConfigDefaults } from '../local/local-config';
import { ScrapeUsageSource, type UsageSeries, type UsageSource } from './vm-usage';

/** The actions the UI offers on a VM. */
export const VM_ACTIONS = ['start', 'stop', 'restart', 'migrate', 'pause', 'unpause', 'softreboot'] as const;
export type VmAction = (typeof VM_ACTIONS)[number];

/** The kinds the list watches. */
export type WatchedKind = 'vm' | 'vmi';

/** A VM with what its page shows. */
export interface VmDetails {
  vm: KubeObject;
  vmi?: KubeObject;
  events: KubeObject[];
  /** The DataVolumes its volumes name (their phase and import progress), where they exist. */
  dataVolumes: KubeObject[];
}

/** The other kinds the console lists, by the name its API uses. */
export const LISTED_KINDS = {
  vmis: VirtualMachineInstanceType,
  migrations: VirtualMachineInstanceMigrationType,
  datavolumes: DataVolumeType,
  snapshots: VirtualMachineSnapshotType,
} as const;
export type ListedKind = keyof typeof LISTED_KINDS;

/** Instance types and preferences a new VM may name (cluster-wide and the namespace's). */
export interface Catalog {
  instancetypes: Array<{ kind: string; name: string }>;
  preferences: Array<{ kind: string; name: string }>;
}

/** The web console's view of KubeVirt. */
export class UiBackend {
  private readonly usageSource?: UsageSource;

  /**
   * `usage` gives the VM page's graphs: by default, in local mode, its virt-handler's
   * /metrics (the URL `up` wrote to the state directory); on a cluster there is none unless
   * given (a Prometheus: tenants cannot reach virt-handler).
   */
  constructor(
    private readonly t: Target,
    usage?: UsageSource,
  ) {
    const local = t.local;
    this.usageSource =
      usage ?? (local ? new ScrapeUsageSource(() => scrapeLocalHandler(local.paths.metricsFile)) : undefined);
  }

  /** `local` or the cluster's URL. */
  get where(): string {
    return this.t.where;
  }

  /** The namespace shown first. */
  get defaultNamespace(): string {
    return this.t.namespace;
  }

  async namespaces(): Promise<string[]> {
    const list = await this.t.client.list(NamespaceType);
    return list.items.map((n) => n.metadata?.name ?? '').filter(Boolean);
  }

  /**
   * Watches VMs or VMIs of `namespace` (all when undefined): the current objects as ADDED
   * events, then changes. `onEnd` is called once when the watch ends by itself.
   */
  async watch(
    kind: WatchedKind,
    namespace: string | undefined,
    onEvent: (e: WatchEvent) => void,
    onEnd: (e?: Error) => void,
  ): Promise<WatchHandle> {
    const type = kind === 'vm' ? VirtualMachineType : VirtualMachineInstanceType;
    const handle = await this.t.client.watch(type, { namespace, allowWatchBookmarks: false }, (e) => {
      if (e.type !== 'BOOKMARK') onEvent(e);
    });
    handle.closed.then(onEnd, onEnd);
    return handle;
  }

  async details(ns: string, name: string): Promise<VmDetails> {
    const vm = await this.t.client.get(VirtualMachineType, name, ns);
    const vmi = await this.t.client.get(VirtualMachineInstanceType, name, ns).catch(() => undefined);
    const uids = new Set([vm.metadata?.uid, vmi?.metadata?.uid].filter(Boolean));
    const all = await this.t.client
      .list(EventType, { namespace: ns, fieldSelector: `involvedObject.name=${name}` })
      .catch(() => ({ items: [] as KubeObject[] }));
    const events = all.items.filter((e) =>
      uids.has((e as KubeObject & { involvedObject?: { uid?: string } }).involvedObject?.uid),
    );
    const volumes = ((vm as VirtualMachine).spec?.template?.spec?.volumes ?? []) as Array<{
      dataVolume?: { name?: string };
    }>;
    const dvNames = [...new Set(volumes.map((v) => v.dataVolume?.name).filter((n): n is string => !!n))];
    const dataVolumes = (
      await Promise.all(dvNames.map((n) => this.t.client.get(DataVolumeType, n, ns).catch(() => undefined)))
    ).filter((d): d is KubeObject => !!d);
    return { vm, vmi, events, dataVolumes };
  }

  /** The objects of one of {@link LISTED_KINDS} in `namespace` (all when undefined). */
  async list(kind: ListedKind, namespace: string | undefined): Promise<KubeObject[]> {
    return (await this.t.client.list(LISTED_KINDS[kind], { namespace })).items;
  }

  /** What the create form offers: instance types and preferences (kinds absent here count as none). */
  async catalog(namespace: string): Promise<Catalog> {
    const names = async (type: ResourceType, ns?: string) =>
      (
        await this.t.client.list(type, { namespace: ns }).catch(() => ({ items: [] as KubeObject[] }))
      ).items.map((o) => ({ kind: type.kind, name: o.metadata?.name ?? '' }));
    const [ci, i, cp, p] = await Promise.all([
      names(VirtualMachineClusterInstancetypeType),
      names(VirtualMachineInstancetypeType, namespace),
      names(VirtualMachineClusterPreferenceType),
      names(VirtualMachinePreferenceType, namespace),
    ]);
    return { instancetypes: [...ci, ...i], preferences: [...cp, ...p] };
  }

  async act(ns: string, name: string, action: VmAction): Promise<void> {
    switch (action) {
      case 'start':
      case 'stop':
      case 'restart':
      case 'migrate':
        await lifecycle({ ...this.t, namespace: ns }, action, name);
        return;
      default:
        await this.t.subresource('PUT', ns, name, action);
    }
  }

  async remove(ns: string, name: string): Promise<void> {
    await this.t.client.delete(VirtualMachineType, name, { namespace: ns });
  }

  /**
   * Creates a VM. Local mode admits it first with upstream's webhook rules and checks its
   * images (its store has no webhooks); a cluster's API server admits it itself. Refusals
   * are `InvalidError`s whose causes name the fields.
   */
  async create(vm: VirtualMachine): Promise<KubeObject> {
    const ns = vm.metadata?.namespace ?? this.t.namespace;
    const obj = await this.admitLocally({ ...vm, metadata: { ...vm.metadata, namespace: ns } } as ApiObject);
    return this.t.client.create(VirtualMachineType, obj as KubeObject);
  }

  /**
   * Replaces VM `ns/name` with `vm` (the YAML editor), admitted as {@link create} admits;
   * its `metadata.resourceVersion` guards against overwriting a newer change (Conflict).
   */
  async replace(ns: string, name: string, vm: VirtualMachine): Promise<KubeObject> {
    if (vm.metadata?.name !== name || (vm.metadata?.namespace ?? ns) !== ns) {
      throw new InvalidError(422, 'Invalid', `metadata.name and metadata.namespace must stay ${ns}/${name}`, {
        name,
        kind: 'VirtualMachine',
        causes: [{ reason: 'FieldValueInvalid', field: 'metadata.name', message: 'may not change' }],
      });
    }
    const obj = await this.admitLocally({ ...vm, metadata: { ...vm.metadata, namespace: ns } } as ApiObject);
    return this.t.client.update(VirtualMachineType, obj as KubeObject);
  }

  /** Local mode's admission (upstream's rules, the image store); a cluster admits by itself. */
  private async admitLocally(obj: ApiObject): Promise<ApiObject> {
    if (!this.t.local) return obj;
    const kv = await storedKubeVirt(this.t.client);
    const config = createClusterConfig(mergeConfiguration(localConfigDefaults(), kv?.spec?.configuration));
    const { object, errors } = admit(obj, config);
    const name = obj.metadata?.name ?? '';
    if (errors.length > 0) {
      throw new InvalidError(422, 'Invalid', `VirtualMachine "${name}" is invalid`, {
        name,
        kind: 'VirtualMachine',
        causes: errors.map((e) => ({ reason: e.type, field: e.path, message: e.message })),
      });
    }
    try {
      new ImageStore(this.t.local.paths.images).checkReferences(object as unknown as VirtualMachine, '');
    } catch (e) {
      if (!(e instanceof ImageNotFoundError)) throw e;
      const message = e.message.replace(/^[^:]*: /, '');
      throw new InvalidError(422, 'Invalid', message, {
        name,
        kind: 'VirtualMachine',
        causes: [{ reason: 'FieldValueNotFound', field: e.field.replace(/^\./, ''), message }],
      });
    }
    return object;
  }

  /**
   * Opens the guest's serial console or VNC byte stream: in local mode the launcher's unix
   * socket (the local API names it), on a cluster virt-api's websocket.
   */
  async openStream(ns: string, name: string, sub: 'console' | 'vnc'): Promise<Duplex> {
    if (this.t.local) {
      const { socket } = await this.t.local.subresource<{ socket: string }>('GET', ns, name, sub);
      return new Promise((resolve, reject) => {
        const s = connect(socket);
        s.once('connect', () => resolve(s));
        s.once('error', (e) => reject(new Error(`${sub} ${ns}/${name}: ${e.message}`)));
      });
    }
    const { openClusterStream } = await import('../commands/virtctl/cluster-stream');
    if (!this.t.kubeConfig) throw new Error('no kubeconfig');
    return openClusterStream(this.t.kubeConfig, ns, name, sub);
  }

  /** The VM's usage over the last minutes (its page's graphs). */
  async usage(ns: string, name: string): Promise<UsageSeries> {
    if (!this.usageSource)
      throw new NoUsageSourceError(
        'no source of usage figures: on a cluster, run `kubevirt-ts ui --prometheus URL` with a Prometheus that scrapes virt-handler',
      );
    return this.usageSource.series(ns, name);
  }

  /** The VNC screenshot (PNG), where the target serves it (virt-api on a cluster). */
  async screenshot(ns: string, name: string): Promise<{ contentType: string; body: Buffer } | undefined> {
    return this.t.subresourceBytes?.(ns, name, 'vnc/screenshot');
  }

  close(): void {
    this.t.close();
  }
}

/** No usage source is configured (answered 404). */
export class NoUsageSourceError extends Error {}

/** local mode's virt-handler /metrics text, or undefined when `up` serves none now. */
async function scrapeLocalHandler(metricsFile: string): Promise<string | undefined> {
  const urls = JSON.parse(await readFile(metricsFile, 'utf8').catch(() => '{}')) as Record<string, string>;
  const url = urls['virt-handler'];
  if (!url) return undefined;
  const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
  return res?.ok ? res.text() : undefined;
}

/** An error as the API said it, for the browser: a Kubernetes Status. */
export function statusOf(e: unknown): { code: number; body: Record<string, unknown> } {
  if (e instanceof ApiError) return { code: e.code || 500, body: { ...e.toStatus() } };
  const message = e instanceof Error ? e.message : String(e);
  const code =
    e instanceof NoUsageSourceError || /not found/i.test(message)
      ? 404
      : /not running|is not|no .* socket/i.test(message)
        ? 409
        : 500;
  return { code, body: { kind: 'Status', apiVersion: 'v1', status: 'Failure', code, message } };
}
