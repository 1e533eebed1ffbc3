#!/usr/bin/env node
/**
 * A thin virt-handler composed from the public package with `createNodeContainer` (an
 * inversify container): the node agent for one node, with the libvirt driver (emulation
 * unless --kvm), and with --pod-runtime the local pod runtime for a node without kubelet.
 *
 *   npx tsx examples/bin/virt-handler.ts --node-name N [--kubeconfig FILE | --store-socket PATH] [--pod-runtime]
 */
import { parseArgs } from 'node:util';
import {
  createNodeContainer,
  type handler,
  KubeClient,
  NodeTokens,
  type podruntime,
} from 'kubevirt-ts/controllers';
import { emulationDriverFactory, libvirtDriverFactory } from 'kubevirt-ts/drivers';

const { values } = parseArgs({
  options: {
    'node-name': { type: 'string' },
    kubeconfig: { type: 'string' },
    'store-socket': { type: 'string' },
    'pods-root': { type: 'string', default: '/var/lib/kubelet/pods' },
    'notify-socket': { type: 'string', default: '/var/run/kubevirt/domain-notify.sock' },
    'libvirt-uri': { type: 'string', default: 'qemu:///system' },
    kvm: { type: 'boolean', default: false },
    'pod-runtime': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  process.stdout.write(
    'usage: virt-handler --node-name N [--kubeconfig FILE | --store-socket PATH] [--pods-root DIR] ' +
      '[--notify-socket PATH] [--libvirt-uri URI] [--kvm] [--pod-runtime]\n',
  );
  process.exit(0);
}
const nodeName = values['node-name'];
if (!nodeName) throw new Error('--node-name is required');
const driver = values.kvm ? 'libvirt' : 'emulation';
const client = values['store-socket']
  ? KubeClient.fromSocket(values['store-socket'])
  : KubeClient.fromKubeconfig(values.kubeconfig);
const container = createNodeContainer({
  client,
  drivers: {
    factories: [libvirtDriverFactory, emulationDriverFactory],
    config: { driver, useEmulation: !values.kvm, settings: { [driver]: { uri: values['libvirt-uri'] } } },
  },
  handler: { nodeName, podsRoot: values['pods-root'], notifySocket: values['notify-socket'] },
  podRuntime: values['pod-runtime']
    ? {
        root: values['pods-root'],
        bindPending: true,
        env: { KUBEVIRT_TS_LIBVIRT_URI: values['libvirt-uri'] },
      }
    : undefined,
});
const runtime = values['pod-runtime']
  ? await container.getAsync<podruntime.PodRuntime>(NodeTokens.podRuntime)
  : undefined;
const agent = await container.getAsync<handler.VirtHandler>(NodeTokens.handler);
await runtime?.start();
await agent.start();
process.stderr.write(`virt-handler ${nodeName}: running\n`);
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    // Guests keep running: the next handler adopts them.
    void Promise.all([agent.stop(), runtime?.stop()]).then(() => process.exit(0));
  });
}
