/**
 * Composes the node side (virt-handler, and optionally the local pod runtime) with
 * inversify, without decorators. The driver used for the host probe comes from the
 * driver composition's registry (`createDriverContainer`), so node labels follow the
 * configured driver and plugins.
 */
import type { Container } from 'inversify';
import type { HypervisorDriver } from '../../drivers/driver';
import {
  createDriverContainer,
  type DriverComposition,
  type DriverRegistry,
  DriverTokens,
} from '../../drivers/registry';
import { PodRuntime, type PodRuntimeOptions } from '../local/pod-runtime/pod-runtime';
import type { ObjectClient } from '../runtime/types';
import { VirtHandler, type VirtHandlerOptions } from '../virt-handler/handler';

/** Service identifiers of the node composition. */
export const NodeTokens = {
  client: Symbol.for('kubevirt-ts.node.ObjectClient'),
  handlerOptions: Symbol.for('kubevirt-ts.node.HandlerOptions'),
  podRuntimeOptions: Symbol.for('kubevirt-ts.node.PodRuntimeOptions'),
  handler: Symbol.for('kubevirt-ts.node.VirtHandler'),
  podRuntime: Symbol.for('kubevirt-ts.node.PodRuntime'),
} as const;

/** Inputs of {@link createNodeContainer}. */
export interface NodeComposition {
  client: ObjectClient;
  drivers: DriverComposition;
  /** Handler options without the parts the container provides (client, capabilities). */
  handler: Omit<VirtHandlerOptions, 'client' | 'capabilities'>;
  /** Also run the local pod runtime with these options (no kubelet on this node). */
  podRuntime?: Omit<PodRuntimeOptions, 'client' | 'nodeName'>;
}

/** Binds the handler (and pod runtime); resolve them with `getAsync`. */
export function createNodeContainer(c: NodeComposition): Container {
  const container = createDriverContainer(c.drivers);
  container.bind<ObjectClient>(NodeTokens.client).toConstantValue(c.client);
  container.bind(NodeTokens.handlerOptions).toConstantValue(c.handler);
  container
    .bind<VirtHandler>(NodeTokens.handler)
    .toResolvedValue(
      (
        client: ObjectClient,
        opts: NodeComposition['handler'],
        driver: HypervisorDriver,
        registry: DriverRegistry,
      ) =>
        new VirtHandler({
          ...opts,
          client,
          capabilities: () => driver.probe(),
          extraLabels: (caps) => registry.nodeLabels(caps),
          extraResources: (caps) => registry.deviceResources(caps),
        }),
      [NodeTokens.client, NodeTokens.handlerOptions, DriverTokens.driver, DriverTokens.registry],
    )
    .inSingletonScope();
  if (c.podRuntime) {
    container.bind(NodeTokens.podRuntimeOptions).toConstantValue(c.podRuntime);
    container
      .bind<PodRuntime>(NodeTokens.podRuntime)
      .toResolvedValue(
        (
          client: ObjectClient,
          opts: NonNullable<NodeComposition['podRuntime']>,
          h: NodeComposition['handler'],
        ) => new PodRuntime({ ...opts, client, nodeName: h.nodeName }),
        [NodeTokens.client, NodeTokens.podRuntimeOptions, NodeTokens.handlerOptions],
      )
      .inSingletonScope();
  }
  return container;
}
