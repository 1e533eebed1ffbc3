/**
 * `kubevirt-ts virt-exportproxy --tls-cert-file F --tls-key-file F --ca-bundle F
 * [--port 8443] [--kubeconfig FILE]`: upstream's virt-exportproxy
 * (controllers/virt-exportproxy), the HTTPS endpoint an Ingress exposes for every
 * VirtualMachineExport. Thin: build the client, serve, stop on SIGTERM/SIGINT.
 */
import type { Command } from 'commander';

interface ProxyFlags {
  kubeconfig?: string;
  host: string;
  port: string;
  tlsCertFile: string;
  tlsKeyFile: string;
  caBundle: string;
}

/** Registers `virt-exportproxy` on the program. */
export function registerVirtExportProxyCommand(program: Command): void {
  program
    .command('virt-exportproxy')
    .description("KubeVirt's export proxy: forwards an Ingress's export requests to each export's server")
    .option('--kubeconfig <file>', 'kubeconfig of the API server (default: the usual lookup)')
    .option('--host <address>', 'address to listen on', '0.0.0.0')
    .option('--port <port>', 'HTTPS port', '8443')
    .requiredOption('--tls-cert-file <file>', 'serving certificate (PEM; re-read every minute)')
    .requiredOption('--tls-key-file <file>', 'serving key (PEM)')
    .requiredOption('--ca-bundle <file>', "CA bundle the export servers' certificates chain to")
    .action(async (f: ProxyFlags) => {
      const port = Number(f.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new Error(`--port: ${JSON.stringify(f.port)} is not a port`);
      const { KubeClient } = await import('../../controllers/runtime/kube/client');
      const { startExportProxy } = await import('../../controllers/virt-exportproxy/server');
      const client = KubeClient.fromKubeconfig(f.kubeconfig);
      const log = (m: string) => console.log(JSON.stringify({ component: 'virt-exportproxy', msg: m }));
      const proxy = await startExportProxy({
        client,
        certFile: f.tlsCertFile,
        keyFile: f.tlsKeyFile,
        caBundleFile: f.caBundle,
        port,
        host: f.host,
        log,
      });
      await new Promise<void>((resolve) => {
        for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => resolve());
      });
      await proxy.close();
      client.close();
    });
}
