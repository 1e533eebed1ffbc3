#!/usr/bin/env node
/**
 * A thin virt-controller composed from the public package: a Kubernetes client from a
 * kubeconfig (or the embedded store's socket), the cluster configuration followed from
 * the KubeVirt resource in `--kubevirt-namespace`, and the controllers, bound in an
 * inversify container without decorators.
 *
 *   npx tsx examples/bin/virt-controller.ts [--kubeconfig FILE | --store-socket PATH] [--leader-elect] [--kvm]
 *
 * Launchers run under software emulation unless --kvm: then the configuration's
 * useEmulation is off and launcher pods select the `libvirt` driver (domain type kvm),
 * asking for the devices.kubevirt.io/kvm resource.
 */
import { parseArgs } from 'node:util';
import { Container } from 'inversify';
import {
  KubeClient,
  KubeVirtConfigWatcher,
  type ObjectClient,
  VirtController,
} from 'kubevirt-ts/controllers';

const { values } = parseArgs({
  options: {
    kubeconfig: { type: 'string' },
    'store-socket': { type: 'string' },
    'leader-elect': { type: 'boolean', default: false },
    kvm: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
    'kubevirt-namespace': { type: 'string', default: 'kubevirt' },
  },
});

if (values.help) {
  process.stdout.write(
    'usage: virt-controller [--kubeconfig FILE | --store-socket PATH] [--leader-elect] [--kvm] [--kubevirt-namespace NS]\n',
  );
  process.exit(0);
}

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
  .bind<KubeVirtConfigWatcher>(T.config)
  .toResolvedValue(
    (client: ObjectClient) =>
      new KubeVirtConfigWatcher({
        client,
        namespace: values['kubevirt-namespace'],
        overrides: { developerConfiguration: { useEmulation: !values.kvm } },
        log: (m) => process.stderr.write(`virt-controller: ${m}\n`),
      }),
    [T.client],
  )
  .inSingletonScope();
container
  .bind<VirtController>(T.controller)
  .toResolvedValue(
    (client: ObjectClient, config: KubeVirtConfigWatcher) =>
      new VirtController({
        client,
        config: () => config.current(),
        // The driver follows useEmulation: `emulation`, or `libvirt` with --kvm.
        launcher: { launcherImage: 'kubevirt-ts/virt-launcher:dev' },
        leaderElection: values['leader-elect']
          ? { namespace: 'kubevirt', name: 'virt-controller' }
          : undefined,
      }),
    [T.client, T.config],
  )
  .inSingletonScope();

await container.get<KubeVirtConfigWatcher>(T.config).start();
const controller = container.get<VirtController>(T.controller);
await controller.start();
process.stderr.write('virt-controller: running\n');
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    void controller.stop().then(() => process.exit(0));
  });
}
