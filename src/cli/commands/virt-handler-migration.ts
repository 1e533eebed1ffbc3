/**
 * `virt-handler`'s migration proxy from its flags, as upstream's cmd/virt-handler builds
 * it: the pod's address (`--pod-ip-address`, the DaemonSet's `$(MY_POD_IP)`), the
 * serving pair (`--tls-cert-file`/`--tls-key-file`), the client pair
 * (`--migration-client-cert-file`/`--migration-client-key-file`) and the KubeVirt CA
 * (`--kubevirt-ca`). Without `--pod-ip-address` the handler has no proxy.
 */
import { existsSync } from 'node:fs';
import { isIP } from 'node:net';
import type { MigrationProxyWiring } from '../../controllers/virt-handler/migration-proxy/wiring';

/** The flags the proxy is built from. */
export interface MigrationProxyFlags {
  podsRoot: string;
  podIpAddress?: string;
  tlsCertFile?: string;
  tlsKeyFile?: string;
  migrationClientCertFile?: string;
  migrationClientKeyFile?: string;
  kubevirtCa?: string;
}

/**
 * The handler's migration proxy, or undefined without `--pod-ip-address`. Throws naming
 * the flag when the address is no IP or a certificate file is missing.
 */
export async function migrationProxyFromFlags(
  f: MigrationProxyFlags,
  disableTls: () => boolean,
  log?: (message: string) => void,
): Promise<MigrationProxyWiring | undefined> {
  if (f.podIpAddress === undefined) return undefined;
  // Empty when the downward API had no pod IP yet: refuse rather than bind every address.
  if (!isIP(f.podIpAddress))
    throw new Error(`--pod-ip-address: ${JSON.stringify(f.podIpAddress)} is not an IP address`);
  const files: Array<[string, string | undefined]> = [
    ['--tls-cert-file', f.tlsCertFile],
    ['--tls-key-file', f.tlsKeyFile],
    ['--migration-client-cert-file', f.migrationClientCertFile],
    ['--migration-client-key-file', f.migrationClientKeyFile],
    ['--kubevirt-ca', f.kubevirtCa],
  ];
  for (const [flag, file] of files) {
    if (!file) throw new Error(`--pod-ip-address needs ${flag} (the migration proxy speaks mutual TLS)`);
    if (!existsSync(file)) throw new Error(`${flag}: ${JSON.stringify(file)} does not exist`);
  }
  const { kubeletMigrationProxy } = await import(
    '../../controllers/virt-handler/migration-proxy/kubelet-wiring'
  );
  const { defaultMigrationRelay, defaultMigrationTlsRelay } = await import(
    '../../controllers/virt-handler/migration-proxy/relay'
  );
  const relay = defaultMigrationRelay();
  const tlsRelay = defaultMigrationTlsRelay();
  log?.(
    `migration proxy: plain (disableTLS) connections copied by ${relay ?? 'Node (no kernel relay found)'}, ` +
      `TLS ones by ${tlsRelay ?? "Node's TLS (no TLS relay found)"}`,
  );
  return kubeletMigrationProxy({
    podsRoot: f.podsRoot,
    address: f.podIpAddress,
    server: { cert: f.tlsCertFile as string, key: f.tlsKeyFile as string },
    client: { cert: f.migrationClientCertFile as string, key: f.migrationClientKeyFile as string },
    caFile: f.kubevirtCa as string,
    disableTls,
    relay,
    tlsRelay,
    log,
  });
}
