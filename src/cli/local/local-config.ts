/** Configuration local mode lays under the KubeVirt resource. */
import type { KubeVirtConfiguration } from '../../api/generated/types';

/**
 * Local mode's defaults under the KubeVirt resource (which may change them): the default
 * pod-network interface uses the masquerade binding, the one the node sets up (upstream's
 * default, bridge, is not done yet; see docs/network.md).
 */
export function localConfigDefaults(): KubeVirtConfiguration {
  return { network: { defaultNetworkInterface: 'masquerade' } };
}
