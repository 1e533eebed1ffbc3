/**
 * Servers follow the KubeVirt CR's `tlsConfiguration` live, as upstream's do (upstream
 * reads the CR in `GetConfigForClient` on every handshake): the options are re-read every
 * second and, when they changed, the server's secure context is replaced, so new
 * connections get the new minimum version and ciphers; open connections keep theirs.
 * Node has no per-handshake hook for connections without SNI, hence the poll (a JSON
 * comparison a second).
 */
import { type TlsProtocolOptions, tlsProtocolOptions } from '../../api/config/tls-configuration';
import type { TLSConfiguration } from '../../api/generated/types';

export type { TlsProtocolOptions } from '../../api/config/tls-configuration';

/** Where a server reads the configuration in force. */
export type TlsConfigurationSource = () => TLSConfiguration | undefined;

/** The options in force now (upstream's defaults without a source). */
export function currentTlsProtocol(source: TlsConfigurationSource | undefined): TlsProtocolOptions {
  return tlsProtocolOptions(source?.());
}

/**
 * Calls `apply` with the new options whenever the source's answer changes (checked every
 * `intervalMs`); returns a function that stops following.
 */
export function followTlsProtocol(
  source: TlsConfigurationSource | undefined,
  apply: (o: TlsProtocolOptions) => void,
  intervalMs = 1_000,
): () => void {
  if (!source) return () => {};
  let last = JSON.stringify(currentTlsProtocol(source));
  const timer = setInterval(() => {
    const now = currentTlsProtocol(source);
    const json = JSON.stringify(now);
    if (json === last) return;
    last = json;
    apply(now);
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
