/**
 * The metrics/health server flags the component commands share: `--metrics-listen
 * host:port`, for HTTPS as in a cluster `--tls-cert-file` with `--tls-key-file`, and
 * `--metrics-listen-retry SECONDS` for replicas that share a node's host network.
 */
import type { MetricsTls } from '../controllers/metrics/server';

/** Parsed listen options for `serveMetrics`. */
export interface MetricsListen {
  host: string;
  port: number;
  tls?: MetricsTls;
  /** Retry binding a port in use every this many ms (`--metrics-listen-retry`). */
  retryInUseMs?: number;
}

const LISTEN = /^(\[[0-9A-Fa-f:.]+\]|[0-9.]+|localhost):(\d{1,5})$/;

/**
 * A self-signed pair for the metrics server while its Secret is not mounted (upstream's
 * FallbackCertificateManager: a CA of its own and a leaf it signs, made in-process).
 * Loaded on demand: x509 code only when a component needs it.
 */
export async function fallbackServingPair(component: string): Promise<{ cert: string; key: string }> {
  const { createCA, createLeaf } = await import('../controllers/virt-operator/certificates');
  const now = new Date();
  const week = 7 * 86_400_000;
  const ca = await createCA(`fallback.${component}.kubevirt.io`, now, week);
  return createLeaf(ca, { commonName: component, dnsNames: [component], usage: 'server' }, now, week);
}

/** Validates the flags; undefined when `--metrics-listen` is absent. */
export function parseMetricsListen(
  f: {
    metricsListen?: string;
    tlsCertFile?: string;
    tlsKeyFile?: string;
    metricsListenRetry?: string;
  },
  component = 'kubevirt-ts',
): MetricsListen | undefined {
  if ((f.tlsCertFile === undefined) !== (f.tlsKeyFile === undefined))
    throw new Error('--tls-cert-file and --tls-key-file go together');
  if (f.metricsListen === undefined) {
    if (f.tlsCertFile) throw new Error('--tls-cert-file needs --metrics-listen');
    if (f.metricsListenRetry !== undefined) throw new Error('--metrics-listen-retry needs --metrics-listen');
    return undefined;
  }
  const m = LISTEN.exec(f.metricsListen);
  const port = Number(m?.[2]);
  if (!m || port > 65535)
    throw new Error(
      `--metrics-listen: ${JSON.stringify(f.metricsListen)} is not address:port (an IP address or localhost, port 0-65535)`,
    );
  const retry = f.metricsListenRetry;
  if (retry !== undefined && (!/^\d{1,4}$/.test(retry) || Number(retry) < 1))
    throw new Error(`--metrics-listen-retry: ${JSON.stringify(retry)} is not a whole number of seconds >= 1`);
  const host = m[1].replace(/^\[|\]$/g, '');
  return {
    host,
    port,
    ...(f.tlsCertFile && f.tlsKeyFile
      ? {
          tls: {
            certFile: f.tlsCertFile,
            keyFile: f.tlsKeyFile,
            fallback: () => fallbackServingPair(component),
          },
        }
      : {}),
    ...(retry !== undefined ? { retryInUseMs: Number(retry) * 1000 } : {}),
  };
}
