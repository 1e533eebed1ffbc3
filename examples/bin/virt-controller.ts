#!/usr/bin/env node
/**
 * A thin virt-controller composed from the public package: a Kubernetes client from a
 * kubeconfig (or the embedded store's socket), the cluster configuration, and the
 * controllers, bound in an inversify container without decorators.
 *
 *   npx tsx examples/bin/virt-controller.ts [--kubeconfig FILE | --store-socket PATH] [--leader-elect]
 */
import { parseArgs } from 'node:util';
import { Container } from 'inversify';
import { type ClusterConfig, createClusterConfig } from 'kubevirt-ts/api';
import { KubeClient, type ObjectClient, VirtController } from 'kubevirt-ts/controllers';

const { values } = parseArgs({
  options: {
    kubeconfig: { type: 'string' },
    'store-socket': { type: 'string' },
    'leader-elect': { type: 'boolean', default: false },
    emulation: { type: 'boolean', default: true },
  },
});

const T = { client: Symbol('client'), config: Symbol('config'), controller: Symbol('controller') };
const container = new Container();
container
  .bind<ObjectClient>(T.client)
  .toConstantValue(
    values['store-socket']
      ? KubeClient.fromSocket(values['store-socket'])
      : KubeClient.fromKubeconfig(values.kubeconfig),
  );
container
  .bind<ClusterConfig>(T.config)
  .toConstantValue(createClusterConfig({ developerConfiguration: { useEmulation: values.emulation } }));
container
  .bind<VirtController>(T.controller)
  .toResolvedValue(
    (client: ObjectClient, config: ClusterConfig) =>
      new VirtController({
        client,
        config,
        launcher: {
          launcherImage: 'kubevirt-ts/virt-launcher:dev',
          hypervisor: values.emulation ? 'emulation' : 'kvm',
        },
        leaderElection: values['leader-elect']
          ? { namespace: 'kubevirt', name: 'virt-controller' }
          : undefined,
      }),
    [T.client, T.config],
  )
  .inSingletonScope();

const controller = container.get<VirtController>(T.controller);
await controller.start();
process.stderr.write('virt-controller: running\n');
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    void controller.stop().then(() => process.exit(0));
  });
}
