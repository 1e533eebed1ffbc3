/**
 * NetworkAttachmentDefinitions for the VMI controller, watched only while their kind is
 * served. The kind comes from Multus's CRD (or kubevirt-ts's copy of it); on a cluster
 * without it an informer would never sync and virt-controller would never start. Upstream
 * reads definitions with a direct GET while rendering a pod, so a missing CRD only fails
 * the VMIs that name one; this does the same with a cache: it probes the kind first, and
 * when it is not served it logs that once, answers "not found" for every definition (the
 * VMI controller's missing-NAD condition) and probes again on an interval, starting the
 * informer when the CRD appears.
 */

import type { Lister } from '../common/controller-ports';
import { isNotFound } from '../runtime/errors';
import type { Informer, SharedInformerFactory } from '../runtime/informer';
import { NetworkAttachmentDefinitionType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';
import type { NetworkAttachmentDefinition } from './services/network-attachments';

/** Options of {@link NetworkAttachmentWatch}. */
export interface NetworkAttachmentWatchOptions {
  client: ObjectClient;
  informers: SharedInformerFactory;
  /** Called for a definition added or changed (the VMIs waiting for it are queued). */
  onChange: (nad: KubeObject) => void;
  /** One line about the kind not being served (default console.warn). */
  log?: (line: string) => void;
  /** How often an unserved kind is probed again (default 30 s). */
  recheckMs?: number;
}

/** A lister of NetworkAttachmentDefinitions that is empty while the kind is not served. */
export class NetworkAttachmentWatch implements Lister<NetworkAttachmentDefinition> {
  private informer?: Informer<KubeObject>;
  private timer?: NodeJS.Timeout;

  constructor(private readonly o: NetworkAttachmentWatchOptions) {}

  /** Whether the informer runs (the kind was served when last probed). */
  get watching(): boolean {
    return this.informer !== undefined;
  }

  /**
   * Probes the kind; served, the informer is made (the manager's start waits for its
   * cache); not served, it logs once and probes again every `recheckMs`.
   */
  async start(): Promise<void> {
    if (this.informer || this.timer) return;
    if (await this.served()) {
      this.watch();
      return;
    }
    const every = this.o.recheckMs ?? 30_000;
    (this.o.log ?? console.warn)(
      `${NetworkAttachmentDefinitionType.group}/${NetworkAttachmentDefinitionType.version} ${NetworkAttachmentDefinitionType.kind} is not served (its CRD is not installed): VMIs with multus networks get no pod until it is; checking again every ${Math.round(every / 1000)} s`,
    );
    this.timer = setInterval(() => {
      void this.served().then(
        (yes) => {
          if (!yes || !this.timer) return;
          this.stop();
          this.watch();
        },
        () => undefined,
      );
    }, every);
    this.timer.unref();
  }

  /** Stops probing (the informer stops with the factory). */
  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  get(key: string): NetworkAttachmentDefinition | undefined {
    return this.informer?.indexer.get(key) as NetworkAttachmentDefinition | undefined;
  }

  list(namespace?: string): NetworkAttachmentDefinition[] {
    const inf = this.informer;
    if (!inf) return [];
    return (
      namespace ? inf.indexer.byIndex('namespace', namespace) : inf.indexer.list()
    ) as NetworkAttachmentDefinition[];
  }

  /** A one-item list: 404 means the API server does not serve the kind. */
  private async served(): Promise<boolean> {
    try {
      await this.o.client.list(NetworkAttachmentDefinitionType, { limit: 1 });
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      // Anything else (a transient error, RBAC): the informer retries and reports as before.
      return true;
    }
  }

  private watch(): void {
    const inf = this.o.informers.informerFor(NetworkAttachmentDefinitionType);
    inf.addEventHandler({ onAdd: this.o.onChange, onUpdate: (_a, b) => this.o.onChange(b) });
    this.informer = inf;
  }
}
