/**
 * `kubevirt-ts virt-operator [--kubeconfig FILE]`: upstream's virt-operator. It installs
 * kubevirt-ts from the KubeVirt CR in its namespace and reports on it. Two replicas run
 * (the operator manifest's Deployment); leader election on the `virt-operator` Lease
 * keeps one reconciling. A replica that loses the Lease exits and restarts as a candidate.
 */

import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { VERBOSITY_HELP } from '../verbosity-flag';
import { followKubeVirtConfig } from './follow-config';
import { restClientRateLimit } from './rest-client-limit';

interface OperatorFlags {
  kubeconfig?: string;
  namespace: string;
  crdsDir?: string;
  imageRegistry: string;
  imageTag: string;
  imagePullPolicy: string;
  devClusterApiserverPort?: string;
  kubeletRootDir?: string;
  csiPoolDir?: string;
  csiPoolSize?: string;
  leaderElect: boolean;
  v: string;
}

const NAMESPACE = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const POLICIES = ['Always', 'IfNotPresent', 'Never'] as const;

/** The package's crds/ (next to dist/ in the package and the image, or the repository's). */
function defaultCrdsDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    if (existsSync(path.join(dir, 'crds', 'kubevirt.io_kubevirts.yaml'))) return path.join(dir, 'crds');
    dir = path.dirname(dir);
  }
  return path.join(dir, 'crds');
}

/** Registers `virt-operator` on the program. */
export function registerVirtOperatorCommand(program: Command): void {
  program
    .command('virt-operator')
    .description(
      'install kubevirt-ts from the KubeVirt resource and report its status (upstream virt-operator)',
    )
    .option('--kubeconfig <file>', 'kubeconfig of the API server (default: in-cluster or the usual lookup)')
    .option(
      '--namespace <ns>',
      'namespace of the install and its KubeVirt resource',
      process.env.POD_NAMESPACE || 'kubevirt',
    )
    .option('--crds-dir <dir>', "the CustomResourceDefinitions to install (default: the package's crds/)")
    .option('--image-registry <registry>', 'default of spec.imageRegistry', 'localhost/kubevirt-ts')
    .option('--image-tag <tag>', 'default of spec.imageTag (the version installed)', 'latest')
    .option('--image-pull-policy <policy>', 'default of spec.imagePullPolicy', 'IfNotPresent')
    .option(
      '--dev-cluster-apiserver-port <port>',
      "the project's dev cluster (no kube-proxy): components on the host network, API server at 127.0.0.1:<port>",
    )
    .option(
      '--kubelet-root-dir <dir>',
      "the nodes' kubelet --root-dir (virt-handler reads <dir>/pods)",
      '/var/lib/kubelet',
    )
    .option(
      '--csi-pool-dir <dir>',
      "the CSI driver's pool on each node (default <kubelet root>/plugins/csi.kubevirt-ts.io/pool)",
    )
    .option('--csi-pool-size <size>', "the CSI pool image's size when a node makes it", '50Gi')
    .option('--no-leader-elect', 'reconcile without the Lease (one replica only)')
    .option('--v <level>', VERBOSITY_HELP, '2')
    .action(async (f: OperatorFlags) => {
      const { ComponentLog, parseVerbosity } = await import('../../controllers/logging/component-log');
      const logs = new ComponentLog('virt-operator', parseVerbosity(f.v)).captureRuntime();
      if (!NAMESPACE.test(f.namespace))
        throw new Error(`--namespace: ${JSON.stringify(f.namespace)} is not a DNS-1123 label`);
      if (!(POLICIES as readonly string[]).includes(f.imagePullPolicy))
        throw new Error(
          `--image-pull-policy: ${JSON.stringify(f.imagePullPolicy)} is not Always, IfNotPresent or Never`,
        );
      let devCluster: { apiServerPort: number } | undefined;
      if (f.devClusterApiserverPort !== undefined) {
        const port = Number(f.devClusterApiserverPort);
        if (!/^\d{1,5}$/.test(f.devClusterApiserverPort) || port < 1 || port > 65535)
          throw new Error(
            `--dev-cluster-apiserver-port: ${JSON.stringify(f.devClusterApiserverPort)} is not a port`,
          );
        devCluster = { apiServerPort: port };
      }
      if (
        !/^\/[A-Za-z0-9._/-]*$/.test(f.kubeletRootDir ?? '/') ||
        (f.kubeletRootDir ?? '').split('/').includes('..')
      )
        throw new Error(
          `--kubelet-root-dir: ${JSON.stringify(f.kubeletRootDir)} is not a plain absolute path`,
        );
      const storage = { csiPoolDir: f.csiPoolDir, csiPoolSize: f.csiPoolSize ?? '50Gi' };
      const { checkInstallOptions, defaultInstallOptions } = await import(
        '../../controllers/virt-operator/components/install-options'
      );
      try {
        checkInstallOptions(defaultInstallOptions(storage));
      } catch (e) {
        throw new Error(
          (e as Error).message
            .replace('install: csiPoolDir', '--csi-pool-dir:')
            .replace('install: csiPoolSize', '--csi-pool-size:'),
        );
      }
      const crdsDir = f.crdsDir ?? defaultCrdsDir();
      if (!existsSync(path.join(crdsDir, 'kubevirt.io_kubevirts.yaml')))
        throw new Error(`--crds-dir: ${crdsDir} holds no kubevirt.io_kubevirts.yaml`);
      const { KubeClient } = await import('../../controllers/runtime/kube/client');
      const { VirtOperator } = await import('../../controllers/virt-operator/operator');
      const log = logs.line;
      const client = KubeClient.fromKubeconfig(f.kubeconfig, restClientRateLimit('virtOperator'));
      // The operator's own client keeps its limit; its log verbosity follows the resource.
      const config = await followKubeVirtConfig({ client, namespace: f.namespace, logs, log });
      let exitCode = 0;
      let done: () => void = () => {};
      const finished = new Promise<void>((r) => {
        done = r;
      });
      const op = new VirtOperator({
        client,
        namespace: f.namespace,
        crdsDir,
        images: {
          registry: f.imageRegistry,
          tag: f.imageTag,
          pullPolicy: f.imagePullPolicy as (typeof POLICIES)[number],
        },
        devCluster,
        kubeletRootDir: f.kubeletRootDir,
        storage,
        leaderElection: f.leaderElect
          ? { identity: `${process.env.POD_NAME || hostname()}_${process.pid}` }
          : false,
        onLostLeadership: () => {
          log('lost the leader Lease: exiting so the pod restarts as a candidate');
          exitCode = 1;
          done();
        },
        onApply: (r) => {
          for (const [what, list] of Object.entries(r)) if (list.length) log(`${what}: ${list.join(', ')}`);
        },
        onError: (name, e) =>
          logs.logger.error(
            { kind: 'KubeVirt', namespace: f.namespace, name, reason: e.message },
            'reconcile failed',
          ),
      });
      process.once('SIGTERM', done);
      process.once('SIGINT', done);
      log(f.leaderElect ? 'waiting for the leader Lease' : 'starting (no leader election)');
      void op.start().then(() => {
        if (op.manager.isLeader()) log('leading: reconciling KubeVirt resources');
      });
      await finished;
      await op.stop();
      await config.stop();
      client.close();
      process.exit(exitCode);
    });
}
