/**
 * `kubevirt-ts virt-handler --node-name NODE [--kubeconfig FILE | --store-socket PATH]`:
 * the node agent, optionally with the local pod runtime for a node without a kubelet.
 * Thin: build the client, compose, start, stop on SIGTERM/SIGINT (guests keep running).
 */

import type { Command } from 'commander';
import type { PodRuntime } from '../../controllers/local/pod-runtime/pod-runtime';
import type { VirtHandler } from '../../controllers/virt-handler/handler';
import { parseMetricsListen } from '../metrics-flags';
import { VERBOSITY_HELP } from '../verbosity-flag';
import { followKubeVirtConfig } from './follow-config';
import { restClientRateLimit } from './rest-client-limit';

/** kubelet's pod root (launcher-protocol/paths; not imported, so the CLI starts without gRPC). */
const KUBELET_PODS_ROOT = '/var/lib/kubelet/pods';
/** kubelet's device-plugin directory (device-plugin.ts; not imported, for the same reason). */
const DEVICE_PLUGIN_DIR = '/var/lib/kubelet/device-plugins';

interface HandlerFlags {
  nodeName: string;
  kubeconfig?: string;
  storeSocket?: string;
  podsRoot: string;
  notifySocket: string;
  driver: string;
  libvirtUri: string;
  libvirtSocket?: string;
  sharedLibvirt?: boolean;
  devicePlugins?: string | boolean;
  podRuntime?: boolean;
  localPods?: boolean;
  bindPending?: boolean;
  imageRoot?: string;
  migrationAddress?: string;
  podIpAddress?: string;
  migrationClientCertFile?: string;
  migrationClientKeyFile?: string;
  kubevirtNamespace: string;
  restPort: string;
  restHost: string;
  tlsCertFile?: string;
  tlsKeyFile?: string;
  kubevirtCa?: string;
  metricsListen?: string;
  metricsListenRetry?: string;
  seccompDir?: string;
  cgroupRoot: string;
  heartbeatInterval: string;
  maxDevices: string;
  v: string;
}

const NODE_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
/** host[:port] (name, IPv4 or [IPv6]) or a libvirt URI such as qemu+tcp://host/system or qemu+unix:///system?socket=/path. */
const MIGRATION_ADDRESS =
  /^(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$|^[a-z][a-z0-9+]*:\/\/[A-Za-z0-9.\-[\]:]*\/[A-Za-z0-9/_.?=&%-]*$/;

/** Registers `virt-handler` on the program. */
export function registerVirtHandlerCommand(program: Command): void {
  program
    .command('virt-handler')
    .description('run the node agent (and with --pod-runtime, the local pod runtime) for one node')
    .requiredOption('--node-name <name>', 'this node')
    .option('--kubeconfig <file>', 'kubeconfig of the API server (default: the usual lookup)')
    .option('--store-socket <path>', "the embedded store's unix socket instead of an API server")
    .option('--pods-root <dir>', 'root of pod directories', KUBELET_PODS_ROOT)
    .option(
      '--notify-socket <path>',
      'the notify socket launchers report to',
      '/var/run/kubevirt/domain-notify.sock',
    )
    .option('--driver <name>', 'hypervisor driver to probe the host with (libvirt or emulation)', 'emulation')
    .option('--libvirt-uri <uri>', 'libvirt connection URI the host is probed on', 'qemu:///system')
    .option(
      '--libvirt-socket <path>',
      "the daemon's unix socket for --libvirt-uri (default libvirt's, /var/run/libvirt/libvirt-sock)",
    )
    .option(
      '--shared-libvirt',
      'with --pod-runtime: launchers use the daemon at --libvirt-uri instead of each running its own',
    )
    .option(
      '--device-plugins [dir]',
      'serve devices.kubevirt.io/kvm, tun, vhost-net (and sev) as kubelet device plugins (default dir /var/lib/kubelet/device-plugins); the kubelet then reports them',
    )
    .option(
      '--max-devices <n>',
      "how many of each shared device (kvm, tun, vhost-net) the node offers: the most VMIs it runs (upstream's flag; the operator sets it from the KubeVirt CR's virtualMachineInstancesPerNode)",
      '1000',
    )
    .option('--pod-runtime', 'also run launcher pods as local processes (no kubelet on this node)')
    .option(
      '--local-pods',
      "launcher pods are local processes that another process's pod runtime runs (no kubelet containers to look into; networking needs --pod-runtime)",
    )
    .option('--bind-pending', 'with --pod-runtime: bind unscheduled pods to this node (no scheduler)')
    .option('--image-root <dir>', 'local image store root handed to launchers')
    .option(
      '--kubevirt-namespace <ns>',
      'namespace of the KubeVirt resource to take the configuration from',
      'kubevirt',
    )
    .option(
      '--rest-port <port>',
      "port of the REST server virt-api calls (mutual TLS; upstream's 8186)",
      '8186',
    )
    .option('--rest-host <address>', 'address of the REST server', '0.0.0.0')
    .option(
      '--tls-cert-file <file>',
      'PEM serving certificate of the REST server (with --kubevirt-ca) and of the metrics server (HTTPS)',
    )
    .option('--tls-key-file <file>', 'PEM key of --tls-cert-file')
    .option(
      '--kubevirt-ca <file>',
      "CA virt-api's client certificate must chain to (turns the REST server on)",
    )
    .option(
      '--migration-address <address>',
      "what migration sources use to reach this node's libvirtd: host[:port] of its TCP listener, or a libvirt URI (without it this node is no migration target)",
    )
    .option(
      '--pod-ip-address <ip>',
      "this handler pod's IP: the migration proxy's listeners bind and advertise it (needs the TLS flags, --kubevirt-ca and --migration-client-*)",
    )
    .option(
      '--migration-client-cert-file <file>',
      'PEM client certificate the migration proxy presents to target handlers',
    )
    .option('--migration-client-key-file <file>', 'PEM key of --migration-client-cert-file')
    .option(
      '--metrics-listen <address:port>',
      'serve /metrics, /healthz and /readyz there (upstream serves them on 0.0.0.0:8443 over HTTPS)',
    )
    .option(
      '--metrics-listen-retry <seconds>',
      'when the metrics port is in use, retry binding it this often instead of failing',
    )
    .option(
      '--seccomp-dir <dir>',
      "the kubelet's seccomp directory (<root-dir>/seccomp): install upstream's launcher profile kubevirt/kubevirt.json there while the KubevirtSeccompProfile gate is on",
    )
    .option(
      '--cgroup-root <dir>',
      "the host's cgroup mount as this process sees it: a hotplugged block device is allowed in a launcher's v1 devices cgroup under it",
      '/proc/1/root/sys/fs/cgroup',
    )
    .option(
      '--heartbeat-interval <s>',
      "seconds between the Node's kubevirt.io/heartbeat stamps (upstream: 60; virt-controller's --node-heartbeat-timeout must be longer)",
      '60',
    )
    .option('--v <level>', VERBOSITY_HELP, '2')
    .action(async (f: HandlerFlags) => {
      // The serving certificate also serves the REST server: metrics use it only when listening.
      const listen = parseMetricsListen(
        f.metricsListen ? f : { metricsListenRetry: f.metricsListenRetry },
        'virt-handler',
      );
      const { ComponentLog, parseVerbosity } = await import('../../controllers/logging/component-log');
      const logs = new ComponentLog('virt-handler', parseVerbosity(f.v)).captureRuntime();
      const logger = logs.logger;
      const log = (m: string) => logger.info({ node: f.nodeName }, m);
      // Loaded here, not at the top: every other command (the launcher above all) starts
      // without the Kubernetes client.
      const { KubeClient } = await import('../../controllers/runtime/kube/client');
      const { createNodeContainer, NodeTokens } = await import(
        '../../controllers/composition/node-container'
      );
      const { emulationDriverFactory, libvirtDriverFactory } = await import(
        '../../drivers/libvirt-driver/factories'
      );
      if (!NODE_NAME.test(f.nodeName))
        throw new Error(`--node-name: ${JSON.stringify(f.nodeName)} is not a DNS subdomain`);
      // It reaches other nodes' launchers as a migration target: one printable word.
      if (f.migrationAddress !== undefined && !MIGRATION_ADDRESS.test(f.migrationAddress))
        throw new Error(
          `--migration-address: ${JSON.stringify(f.migrationAddress)} is neither host[:port] nor a libvirt URI`,
        );
      if (!/^\d{1,6}$/.test(f.heartbeatInterval) || Number(f.heartbeatInterval) < 1)
        throw new Error(
          `--heartbeat-interval: ${JSON.stringify(f.heartbeatInterval)} is not a whole number of seconds >= 1`,
        );
      if (!/^\d{1,6}$/.test(f.maxDevices) || Number(f.maxDevices) < 1)
        throw new Error(`--max-devices: ${JSON.stringify(f.maxDevices)} is not a whole number >= 1`);
      const client = f.storeSocket
        ? KubeClient.fromSocket(f.storeSocket, restClientRateLimit('virtHandler'))
        : KubeClient.fromKubeconfig(f.kubeconfig, restClientRateLimit('virtHandler'));
      const env: Record<string, string> = f.sharedLibvirt ? { KUBEVIRT_TS_LIBVIRT_URI: f.libvirtUri } : {};
      if (f.imageRoot) env.KUBEVIRT_TS_IMAGE_ROOT = f.imageRoot;
      // Migration settings (bandwidth, timeouts, ...) follow the KubeVirt resource, as upstream's.
      // upstream: the profile is (re)installed whenever the configuration changes and the gate is on.
      const seccomp = f.seccompDir
        ? await import('../../controllers/virt-handler/seccomp/install-profile')
        : undefined;
      const installProfile = (c: import('../../api/config/cluster-config').ClusterConfig) => {
        if (!seccomp || !f.seccompDir || !c.isFeatureGateEnabled('KubevirtSeccompProfile')) return;
        try {
          if (seccomp.installSeccompProfile(f.seccompDir))
            log(`seccomp profile ${seccomp.PROFILE_RELATIVE_PATH} installed in ${f.seccompDir}`);
        } catch (e) {
          log(`seccomp profile not installed: ${(e as Error).message}`);
        }
      };
      // upstream: logVerbosity.nodeVerbosity[node], else .virtHandler, wins over --v while set.
      const config = await followKubeVirtConfig({
        client,
        namespace: f.kubevirtNamespace,
        logs,
        log,
        rateLimited: 'virtHandler',
        node: f.nodeName,
        onConfig: installProfile,
      });
      const { migrationProxyFromFlags } = await import('./virt-handler-migration');
      // A migration's proxies follow its own disableTLS (status.migrationState); the CR's
      // stands in only for a migration that carries no configuration.
      const migrationProxy = await migrationProxyFromFlags(
        f,
        () => config.current().migrations.disableTLS === true,
        (m) => logger.info({ node: f.nodeName, part: 'migration-proxy' }, m),
      );
      const container = createNodeContainer({
        client,
        drivers: {
          factories: [libvirtDriverFactory, emulationDriverFactory],
          config: {
            driver: f.driver,
            useEmulation: f.driver === 'emulation',
            settings: { [f.driver]: { uri: f.libvirtUri, socketPath: f.libvirtSocket } },
          },
        },
        handler: {
          nodeName: f.nodeName,
          podsRoot: f.podsRoot,
          notifySocket: f.notifySocket,
          heartbeatMs: Number(f.heartbeatInterval) * 1000,
          migrationAddress: f.migrationAddress,
          migrationConfig: () => config.current().migrations,
          migrationProxy,
          devicePluginDir:
            f.devicePlugins === undefined || f.devicePlugins === false
              ? undefined
              : f.devicePlugins === true
                ? DEVICE_PLUGIN_DIR
                : f.devicePlugins,
          maxDevices: Number(f.maxDevices),
          logger,
          // A kubelet's launcher pods: found through the host's /proc (hostPID).
          procRoot: f.podRuntime || f.localPods ? undefined : '/proc',
          cgroupRoot: f.cgroupRoot,
        },
        podRuntime: f.podRuntime
          ? {
              root: f.podsRoot,
              bindPending: f.bindPending,
              env,
              log: (m) => logger.info({ node: f.nodeName, part: 'pod-runtime' }, m),
            }
          : undefined,
      });
      const runtime = f.podRuntime ? await container.getAsync<PodRuntime>(NodeTokens.podRuntime) : undefined;
      const handler = await container.getAsync<VirtHandler>(NodeTokens.handler);
      await runtime?.start();
      await handler.start();
      const restPort = Number(f.restPort);
      if (!Number.isInteger(restPort) || restPort < 0 || restPort > 65535)
        throw new Error(`--rest-port: ${JSON.stringify(f.restPort)} is not a port`);
      if (f.kubevirtCa && !(f.tlsCertFile && f.tlsKeyFile))
        throw new Error(
          '--kubevirt-ca needs --tls-cert-file and --tls-key-file (the REST server needs both)',
        );
      const rest =
        f.tlsCertFile && f.tlsKeyFile && f.kubevirtCa
          ? await (await import('../../controllers/virt-handler/rest-server')).serveHandlerRest({
              launchers: handler,
              tls: { cert: f.tlsCertFile, key: f.tlsKeyFile, ca: f.kubevirtCa },
              host: f.restHost,
              port: restPort,
              tlsConfiguration: () => config.current().configuration.tlsConfiguration,
              log: (m) => logger.info({ node: f.nodeName, part: 'rest' }, m),
            })
          : undefined;
      let metrics: { url: string; close(): Promise<void> } | undefined;
      if (listen) {
        const { serveMetrics } = await import('../../controllers/metrics/server');
        const { HandlerMetrics } = await import('../../controllers/metrics/handler-metrics');
        metrics = await serveMetrics({
          ...listen,
          sources: [
            new HandlerMetrics({ targets: () => handler.statsTargets(), ready: () => handler.isReady() }),
          ],
          ready: () => handler.isReady(),
          tlsConfiguration: () => config.current().configuration.tlsConfiguration,
          log,
        });
        log(`metrics on ${metrics.url}/metrics`);
      }
      log(`running${rest ? ` (REST on ${f.restHost}:${rest.port})` : ''}`);
      await new Promise<void>((resolve) => {
        process.once('SIGTERM', resolve);
        process.once('SIGINT', resolve);
      });
      await rest?.close();
      await metrics?.close();
      await handler.stop();
      await migrationProxy?.manager.shutdown();
      await runtime?.stop();
      await config.stop();
      client.close();
      process.exit(0);
    });
}
