/**
 * `kubevirt-ts virt-api --tls-cert-file F --tls-key-file F --handler-client-cert F
 * --handler-client-key F --kubevirt-ca F [--kubeconfig FILE]`: the admission webhooks and
 * the aggregated `subresources.kubevirt.io` API. Thin: build the client, follow the
 * KubeVirt configuration, serve, stop on SIGTERM/SIGINT.
 */

import type { Command } from 'commander';
import { VERBOSITY_HELP } from '../verbosity-flag';
import { followKubeVirtConfig } from './follow-config';
import { restClientRateLimit } from './rest-client-limit';

interface ApiFlags {
  kubeconfig?: string;
  host: string;
  port: string;
  tlsCertFile: string;
  tlsKeyFile: string;
  handlerClientCert: string;
  handlerClientKey: string;
  kubevirtCa: string;
  handlerPort: string;
  kubevirtNamespace: string;
  privilegedUser: string[];
  uploadTokenSignerKey?: string;
  v: string;
}

function port(flag: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new Error(`${flag}: ${JSON.stringify(v)} is not a port`);
  return n;
}

/** Registers `virt-api` on the program. */
export function registerVirtApiCommand(program: Command): void {
  program
    .command('virt-api')
    .description('serve the admission webhooks and the subresources.kubevirt.io API')
    .option('--kubeconfig <file>', 'kubeconfig of the API server (default: the usual lookup)')
    .option('--host <address>', 'address to listen on', '0.0.0.0')
    .option('--port <port>', 'HTTPS port', '8443')
    .requiredOption('--tls-cert-file <file>', 'serving certificate (PEM; re-read when it changes)')
    .requiredOption('--tls-key-file <file>', 'serving key (PEM)')
    .requiredOption('--handler-client-cert <file>', 'client certificate presented to virt-handlers')
    .requiredOption('--handler-client-key <file>', 'its key')
    .requiredOption('--kubevirt-ca <file>', "CA the virt-handlers' certificates chain to")
    .option('--handler-port <port>', "virt-handlers' REST port", '8186')
    .option(
      '--kubevirt-namespace <ns>',
      "KubeVirt's namespace (its resource, service accounts, handlers)",
      'kubevirt',
    )
    .option(
      '--privileged-user <name>',
      "a user allowed to change VMI specs, like KubeVirt's service accounts (repeatable)",
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option(
      '--upload-token-signer-key <file>',
      'private key (PEM) signing upload tokens: serve upload.cdi.kubevirt.io UploadTokenRequests',
    )
    .option('--v <level>', VERBOSITY_HELP, '2')
    .action(async (f: ApiFlags) => {
      const { ComponentLog, parseVerbosity } = await import('../../controllers/logging/component-log');
      const logs = new ComponentLog('virt-api', parseVerbosity(f.v)).captureRuntime();
      const { KubeClient } = await import('../../controllers/runtime/kube/client');
      const { startVirtApi } = await import('../../controllers/virt-api/server');
      const log = logs.line;
      const client = KubeClient.fromKubeconfig(f.kubeconfig, restClientRateLimit('virtAPI'));
      const config = await followKubeVirtConfig({
        client,
        namespace: f.kubevirtNamespace,
        logs,
        log,
        rateLimited: 'virtAPI',
      });
      const api = await startVirtApi({
        client,
        tls: { cert: f.tlsCertFile, key: f.tlsKeyFile },
        host: f.host,
        port: port('--port', f.port),
        config: () => config.current(),
        kubevirtNamespace: f.kubevirtNamespace,
        handler: {
          tls: { cert: f.handlerClientCert, key: f.handlerClientKey, ca: f.kubevirtCa },
          port: port('--handler-port', f.handlerPort),
        },
        privilegedUsers: f.privilegedUser,
        uploadTokenSignerKeyFile: f.uploadTokenSignerKey,
        log,
        // Each subresource call and admission refusal, naming the object (kind, namespace, name, uid).
        objectLog: logs.logger,
      });
      log(`serving on ${f.host}:${api.port}`);
      await new Promise<void>((resolve) => {
        process.once('SIGTERM', resolve);
        process.once('SIGINT', resolve);
      });
      await api.close();
      await config.stop();
      client.close();
      process.exit(0);
    });
}
