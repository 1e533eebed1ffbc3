/**
 * The metrics/health server flags the component commands share: `--metrics-listen
 * host:port` and, for HTTPS as in a cluster, `--tls-cert-file` with `--tls-key-file`.
 */

/** Parsed listen options for `serveMetrics`. */
export interface MetricsListen {
  host: string;
  port: number;
  tls?: { certFile: string; keyFile: string };
}

const LISTEN = /^(\[[0-9A-Fa-f:.]+\]|[0-9.]+|localhost):(\d{1,5})$/;

/** Validates the flags; undefined when `--metrics-listen` is absent. */
export function parseMetricsListen(f: {
  metricsListen?: string;
  tlsCertFile?: string;
  tlsKeyFile?: string;
}): MetricsListen | undefined {
  if ((f.tlsCertFile === undefined) !== (f.tlsKeyFile === undefined))
    throw new Error('--tls-cert-file and --tls-key-file go together');
  if (f.metricsListen === undefined) {
    if (f.tlsCertFile) throw new Error('--tls-cert-file needs --metrics-listen');
    return undefined;
  }
  const m = LISTEN.exec(f.metricsListen);
  const port = Number(m?.[2]);
  if (!m || port > 65535)
    throw new Error(
      `--metrics-listen: ${JSON.stringify(f.metricsListen)} is not address:port (an IP address or localhost, port 0-65535)`,
    );
  const host = m[1].replace(/^\[|\]$/g, '');
  return {
    host,
    port,
    ...(f.tlsCertFile && f.tlsKeyFile ? { tls: { certFile: f.tlsCertFile, keyFile: f.tlsKeyFile } } : {}),
  };
}
