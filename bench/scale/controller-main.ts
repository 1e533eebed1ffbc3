/**
 * virt-controller for the scale benchmark, in its own process (its RSS is measured): the
 * real VirtController composed as examples/bin/virt-controller.ts composes it, with
 * emulation (no /dev/kvm on simulated nodes) and upstream's client QPS/burst 200/400.
 * Prints `ready` once started, and on SIGUSR2 `counts {json}`: its requests so far by
 * `method resource`; SIGTERM stops it (and writes a --cpu-prof profile).
 *
 *   node [--cpu-prof] --import tsx bench/scale/controller-main.ts (--kubeconfig F | --socket P)
 */
import { parseArgs } from 'node:util';
import { createClusterConfig } from '../../src/api/config/cluster-config';
import { VirtController } from '../../src/controllers/virt-controller/virt-controller';
import { clientFromArgs, connectOptions, exitWithParent } from './connect';
import { countRequests, requestSummary } from './request-count';

exitWithParent();
const { values } = parseArgs({ options: { ...connectOptions } });
let errors = 0;
const QPS = 200;
const counted = countRequests(clientFromArgs(values, { qps: QPS, burst: 400 }));
const controller = new VirtController({
  client: counted.client,
  config: createClusterConfig(
    { developerConfiguration: { useEmulation: true } },
    { hostArchitecture: 'amd64' },
  ),
  launcher: { launcherImage: 'kubevirt-ts/virt-launcher:dev', hypervisor: 'emulation' },
  onError: (c, k, e) => {
    if (errors++ < 20) process.stderr.write(`virt-controller ${c} ${k}: ${e.message}\n`);
  },
});
// The benchmark asks for the counts so far (proc.ts requestCounts).
process.on('SIGUSR2', () => {
  process.stdout.write(`counts ${JSON.stringify(Object.fromEntries(counted.byKind))}\n`);
});
await controller.start();
process.stdout.write('ready\n');
process.once('SIGTERM', () => {
  void controller.stop().then(() => {
    process.stderr.write(`virt-controller: ${errors} reconcile errors\n`);
    process.stderr.write(`virt-controller client: ${requestSummary(counted, QPS)}\n`);
    process.exit(0);
  });
});
