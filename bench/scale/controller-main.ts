/**
 * virt-controller for the scale benchmark, in its own process (its RSS is measured): the
 * real VirtController composed as examples/bin/virt-controller.ts composes it, with
 * emulation (no /dev/kvm on simulated nodes) and upstream's client QPS/burst 200/400
 * (`--qps N`: N and 2N, as the KubeVirt CR's controllerConfiguration.restClient would set;
 * `--qps Infinity`: no limit, what the benchmark gives it on the embedded store).
 * Prints `ready` once started, and on SIGUSR2 `counts {json}`: its requests so far by
 * `method resource`; SIGTERM stops it (and writes a --cpu-prof profile).
 *
 *   node [--cpu-prof] --import tsx bench/scale/controller-main.ts (--kubeconfig F | --socket P) [--qps N] [--workers W]
 */
import { parseArgs } from 'node:util';
import { createClusterConfig } from '../../src/api/config/cluster-config';
import { DEFAULT_RATE_LIMITS } from '../../src/api/config/rest-client';
import { VirtController } from '../../src/controllers/virt-controller/virt-controller';
import { clientFromArgs, connectOptions, exitWithParent } from './connect';
import { countRequests, requestSummary } from './request-count';

exitWithParent();
const { values } = parseArgs({
  options: { ...connectOptions, qps: { type: 'string' }, workers: { type: 'string' } },
});
let errors = 0;
// upstream's default; --qps N stands for the KubeVirt CR's controllerConfiguration.restClient.
const QPS = Number(values.qps ?? DEFAULT_RATE_LIMITS.virtController.qps);
const BURST = values.qps ? 2 * QPS : DEFAULT_RATE_LIMITS.virtController.burst;
const counted = countRequests(clientFromArgs(values, { qps: QPS, burst: BURST }));
const controller = new VirtController({
  client: counted.client,
  workers: values.workers ? Number(values.workers) : undefined,
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
