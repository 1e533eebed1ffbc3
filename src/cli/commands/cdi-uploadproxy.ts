/**
 * `kubevirt-ts cdi-uploadproxy --tls-cert-file F --tls-key-file F --signer-cert F
 * --client-cert F --client-key F --ca-bundle F [--port 8443] [--kubeconfig FILE]`: CDI's
 * upload proxy (controllers/cdi-uploadproxy). Thin: build the client, serve, stop on
 * SIGTERM/SIGINT.
 */
import type { Command } from 'commander';
import { UPLOAD_PROXY_PORT } from '../../controllers/common/cdi-upload';

interface ProxyFlags {
  kubeconfig?: string;
  host: string;
  port: string;
  tlsCertFile: string;
  tlsKeyFile: string;
  signerCert: string;
  clientCert: string;
  clientKey: string;
  caBundle: string;
}

/** Registers `cdi-uploadproxy` on the program. */
export function registerCdiUploadProxyCommand(program: Command): void {
  program
    .command('cdi-uploadproxy')
    .description(
      "CDI's upload proxy: takes virtctl image-upload's image and token, forwards to the upload pod",
    )
    .option('--kubeconfig <file>', 'kubeconfig of the API server (default: the usual lookup)')
    .option('--host <address>', 'address to listen on', '0.0.0.0')
    .option('--port <port>', 'HTTPS port', String(UPLOAD_PROXY_PORT))
    .requiredOption('--tls-cert-file <file>', 'serving certificate (PEM; re-read every minute)')
    .requiredOption('--tls-key-file <file>', 'serving key (PEM)')
    .requiredOption('--signer-cert <file>', "the upload-token signer's certificate (virt-api signs tokens)")
    .requiredOption('--client-cert <file>', 'client certificate presented to upload servers')
    .requiredOption('--client-key <file>', 'its key')
    .requiredOption('--ca-bundle <file>', "CA bundle the upload servers' certificates chain to")
    .action(async (f: ProxyFlags) => {
      const port = Number(f.port);
      if (!Number.isInteger(port) || port < 0 || port > 65535)
        throw new Error(`--port: ${JSON.stringify(f.port)} is not a port`);
      const { KubeClient } = await import('../../controllers/runtime/kube/client');
      const { startUploadProxy } = await import('../../controllers/cdi-uploadproxy/upload-proxy');
      const client = KubeClient.fromKubeconfig(f.kubeconfig);
      const log = (m: string) => console.log(JSON.stringify({ component: 'cdi-uploadproxy', msg: m }));
      const proxy = await startUploadProxy({
        client,
        certFile: f.tlsCertFile,
        keyFile: f.tlsKeyFile,
        signerCertFile: f.signerCert,
        clientCertFile: f.clientCert,
        clientKeyFile: f.clientKey,
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
