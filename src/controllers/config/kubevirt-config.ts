/**
 * The cluster configuration as the components follow it: from the KubeVirt custom
 * resource's `spec.configuration`, as upstream's virt-controller, virt-handler and
 * virt-api read it through an informer. Upstream's choice of the resource: the one that
 * is not being deleted (the oldest when there are several). A configuration that fails
 * validation is not taken: the last valid one stays, and the problem is logged.
 * `overrides` are laid over whatever the resource says (local mode forces
 * `developerConfiguration.useEmulation` to what its host can do).
 */
import {
  type ClusterConfig,
  type ClusterConfigOptions,
  createClusterConfig,
  mergeConfiguration,
} from '../../api/config/cluster-config';
import { validateKubeVirtConfiguration } from '../../api/config/validate-configuration';
import type { KubeVirt, KubeVirtConfiguration } from '../../api/generated/types';
import { type Informer, SharedInformerFactory } from '../runtime/informer';
import { KubeVirtType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';

/** The KubeVirt resource upstream's components take their configuration from. */
export function pickKubeVirt<T extends KubeVirt>(objects: readonly T[]): T | undefined {
  return objects
    .filter((o) => !o.metadata?.deletionTimestamp)
    .sort((a, b) =>
      String(a.metadata?.creationTimestamp ?? '').localeCompare(String(b.metadata?.creationTimestamp ?? '')),
    )[0];
}

/** Options of {@link KubeVirtConfigWatcher}. */
export interface KubeVirtConfigWatcherOptions {
  client: ObjectClient;
  /** Watch KubeVirt resources in this namespace only (default: all, as in local mode). */
  namespace?: string;
  overrides?: KubeVirtConfiguration;
  /** Laid under whatever the resource says (local mode's own defaults; the resource wins). */
  defaults?: KubeVirtConfiguration;
  options?: ClusterConfigOptions;
  /** Called after the configuration changed. */
  onChange?: (config: ClusterConfig) => void;
  log?: (message: string) => void;
}

/** Follows the KubeVirt resource; {@link current} is the configuration in force. */
export class KubeVirtConfigWatcher {
  private readonly informers: SharedInformerFactory;
  private readonly informer: Informer<KubeObject>;
  private config: ClusterConfig;
  private lastJson = '';

  constructor(private readonly o: KubeVirtConfigWatcherOptions) {
    const initial = mergeConfiguration(o.defaults, o.overrides);
    this.config = createClusterConfig(initial, o.options);
    this.lastJson = JSON.stringify(initial);
    this.informers = new SharedInformerFactory(o.client);
    this.informer = this.informers.informerFor(KubeVirtType, { namespace: o.namespace });
    const refresh = () => this.refresh();
    this.informer.addEventHandler({ onAdd: refresh, onUpdate: refresh, onDelete: refresh });
  }

  /** Starts watching; resolves once the current resource (if any) is taken. */
  async start(): Promise<void> {
    this.informers.start();
    await this.informers.waitForCacheSync();
    this.refresh();
  }

  async stop(): Promise<void> {
    await this.informers.shutdown();
  }

  /** The configuration in force (upstream's defaults when no KubeVirt resource exists). */
  current(): ClusterConfig {
    return this.config;
  }

  private refresh(): void {
    const kv = pickKubeVirt(this.informer.indexer.list() as Array<KubeVirt & KubeObject>);
    const configuration = kv?.spec?.configuration;
    const errors = validateKubeVirtConfiguration(configuration);
    if (errors.length > 0) {
      const id = `KubeVirt ${kv?.metadata?.namespace}/${kv?.metadata?.name}`;
      this.o.log?.(
        `${id}: configuration not taken: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`,
      );
      return;
    }
    const merged = mergeConfiguration(mergeConfiguration(this.o.defaults, configuration), this.o.overrides);
    const json = JSON.stringify(merged);
    if (json === this.lastJson) return;
    this.lastJson = json;
    this.config = createClusterConfig(merged, this.o.options);
    this.o.onChange?.(this.config);
  }
}
