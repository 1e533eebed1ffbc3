/**
 * `kubevirt-ts ui [--port N] [--address A] [--kubeconfig FILE] [--prometheus URL]`: the web console. Serves
 * the page on loopback and acts on local mode (the running `up` of the state directory)
 * or, with `--kubeconfig`, on that cluster with the kubeconfig's credentials, which stay
 * in this process. Prints the URL with its session token and runs until Ctrl-C.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { UiBackend } from '../ui/backend';
import { PrometheusUsageSource } from '../ui/prometheus-usage';
import { startUiServer } from '../ui/server';
import { openTarget, type TargetOptions, withTargetOptions } from './virtctl/target';

/** Options of the ui command. */
export interface UiOptions extends TargetOptions {
  port?: string;
  address?: string;
  tlsCert?: string;
  tlsKey?: string;
  prometheus?: string;
}

/** The `--prometheus` source, after checking the URL. */
function prometheusSource(url: string | undefined): PrometheusUsageSource | undefined {
  if (!url) return undefined;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new Error(`--prometheus: ${JSON.stringify(url)} is not a URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw new Error(`--prometheus: ${JSON.stringify(url)} is not an http(s) URL`);
  return new PrometheusUsageSource(u.origin + u.pathname.replace(/\/$/, ''));
}

/** Registers `ui`. */
export function registerUiCommand(program: Command): void {
  withTargetOptions(
    program
      .command('ui')
      .description('serve the web console (VM list, actions, serial console, VNC, create)')
      .option('--port <n>', 'port to listen on (default: a free one)', '0')
      .option('--address <addr>', 'address to listen on (loopback unless widened explicitly)', '127.0.0.1')
      .option('--tls-cert <file>', 'serve HTTPS with this certificate (PEM); needed off loopback')
      .option('--tls-key <file>', "the certificate's private key (PEM)")
      .option(
        '--prometheus <url>',
        "a Prometheus that scrapes virt-handler, for the VM page's graphs (local mode reads its virt-handler without one)",
      ),
  ).action(async (o: UiOptions) => {
    const port = Number(o.port);
    if (!Number.isInteger(port) || port < 0 || port > 65535) {
      throw new Error(`--port: ${JSON.stringify(o.port)} is not a port number (0-65535)`);
    }
    if (Boolean(o.tlsCert) !== Boolean(o.tlsKey)) throw new Error('--tls-cert and --tls-key go together');
    const tls =
      o.tlsCert && o.tlsKey ? { cert: readFileSync(o.tlsCert), key: readFileSync(o.tlsKey) } : undefined;
    const backend = new UiBackend(openTarget(o), prometheusSource(o.prometheus));
    const server = await startUiServer({ backend, port, address: o.address, tls }).catch((e: unknown) => {
      backend.close();
      throw e;
    });
    process.stdout.write(`kubevirt-ts ui: ${backend.where}, serving ${server.url}\n`);
    if (!['127.0.0.1', '::1', 'localhost'].includes(o.address ?? '127.0.0.1')) {
      process.stderr.write(
        `warning: listening on ${o.address}: whoever can reach it and has the URL's token acts with your credentials\n`,
      );
    }
    await new Promise<void>((resolve) => {
      const stop = () => resolve();
      process.once('SIGINT', stop);
      process.once('SIGTERM', stop);
    });
    await server.close();
    backend.close();
  });
}
