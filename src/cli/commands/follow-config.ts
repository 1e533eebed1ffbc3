/**
 * How a component's command follows the KubeVirt resource's configuration, as upstream's
 * components do: its log verbosity (`logVerbosity` wins over --v while set) and, for the
 * rate-limited ones, its client rate limit, applied at start and on every change.
 */
import type { ClusterConfig } from '../../api/config/cluster-config';
import type { RateLimitedComponent } from '../../api/config/rest-client';
import type { KubeVirtConfigWatcher } from '../../controllers/config/kubevirt-config';
import type { ComponentLog } from '../../controllers/logging/component-log';
import type { KubeClient } from '../../controllers/runtime/kube/client';
import { followRateLimit } from './rest-client-limit';

/** What {@link followKubeVirtConfig} applies the configuration to. */
export interface FollowConfigOptions {
  client: KubeClient;
  /** The namespace of the KubeVirt resource. */
  namespace: string;
  logs: ComponentLog;
  log: (message: string) => void;
  /** The component whose client rate limit follows the resource; without it the limit stays. */
  rateLimited?: RateLimitedComponent;
  /** virt-handler's node (`logVerbosity.nodeVerbosity`). */
  node?: string;
  /** Applied too, after the verbosity and before the rate limit. */
  onConfig?: (config: ClusterConfig) => void;
}

/** Starts a watcher of the KubeVirt resource; applies its configuration now and on each change. */
export async function followKubeVirtConfig(o: FollowConfigOptions): Promise<KubeVirtConfigWatcher> {
  // Loaded here so the other commands start without the Kubernetes client.
  const { KubeVirtConfigWatcher } = await import('../../controllers/config/kubevirt-config');
  const apply = (c: ClusterConfig) => {
    o.logs.followConfig(c.configuration, o.node);
    o.onConfig?.(c);
    if (o.rateLimited) followRateLimit(o.client, o.rateLimited, c, o.log);
  };
  const config = new KubeVirtConfigWatcher({
    client: o.client,
    namespace: o.namespace,
    log: o.log,
    onChange: apply,
  });
  await config.start();
  apply(config.current());
  return config;
}
