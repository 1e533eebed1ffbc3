/**
 * What a handler does for its node before it watches VMIs: probe the host, derive the
 * node's labels and device resources, serve the devices as kubelet device plugins (on a
 * node with a kubelet) and register and heartbeat the Node.
 */
import type { DevicePlugin } from './device-plugin/device-plugin';
import { nodeSharedDevices, startDevicePlugins } from './device-plugin/node-devices';
import type { VirtHandlerOptions } from './handler-options';
import { nodeDeviceResources, nodeLabelsFor } from './node-labels';
import { NodeRegistrar } from './node-registrar';

/** The node as the handler set it up; `devicePlugins` and `registrar` are stopped with it. */
export interface NodeSetup {
  labels: Record<string, string>;
  resources: Record<string, string>;
  devicePlugins: DevicePlugin[];
  registrar?: NodeRegistrar;
}

/** Probes the host and sets the node up as `o` asks. */
export async function setUpNode(o: VirtHandlerOptions, log: (m: string) => void): Promise<NodeSetup> {
  const caps = await o.capabilities();
  const labels = nodeLabelsFor(caps, o.extraLabels?.(caps));
  const resources = nodeDeviceResources(caps, o.extraResources?.(caps), o.maxDevices);
  let devicePlugins: DevicePlugin[] = [];
  if (o.devicePluginDir !== undefined) {
    devicePlugins = await startDevicePlugins(nodeSharedDevices(caps, o.maxDevices), {
      pluginDir: o.devicePluginDir,
      log,
    });
    // The kubelet reports these in the Node's capacity now.
    for (const name of Object.keys(nodeDeviceResources(caps))) delete resources[name];
  }
  let registrar: NodeRegistrar | undefined;
  if (o.registerNode !== false) {
    registrar = new NodeRegistrar({
      client: o.client,
      nodeName: o.nodeName,
      labels,
      resources,
      heartbeatMs: o.heartbeatMs,
      onWrite: () => o.onWrite?.('Node', o.nodeName),
    });
    await registrar.register();
  }
  return { labels, resources, devicePlugins, registrar };
}
