/**
 * The components' client rate limits on the command line: upstream's default per
 * component, then the KubeVirt CR's `<component>Configuration.restClient` as it changes.
 */
import type { ClusterConfig } from '../../api/config/cluster-config';
import { type RateLimitedComponent, restClientRateLimit } from '../../api/config/rest-client';
import type { KubeClient } from '../../controllers/runtime/kube/client';

export { restClientRateLimit };

/** Applies `component`'s limit under `config` to `client`, logging a change. */
export function followRateLimit(
  client: KubeClient,
  component: RateLimitedComponent,
  config: ClusterConfig,
  log: (m: string) => void,
): void {
  const l = restClientRateLimit(component, config.configuration);
  if (client.setRateLimit(l.qps, l.burst)) log(`client rate limit: ${l.qps} qps, burst ${l.burst}`);
}
