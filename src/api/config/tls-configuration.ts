/**
 * The KubeVirt CR's `spec.configuration.tlsConfiguration` (minimum TLS version, cipher
 * suites) as upstream reads it (pkg/util/tls), for servers built on OpenSSL.
 *
 * Upstream names ciphers as Go's crypto/tls does (`TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256`,
 * the IANA names; Go's `tls.CipherSuites()` and `tls.InsecureCipherSuites()`); OpenSSL, and
 * so Node, names them differently (`ECDHE-RSA-AES128-GCM-SHA256`). {@link GO_CIPHER_SUITES}
 * maps one to the other. Upstream's operator webhook refuses a name Go does not know and
 * ciphers with a TLS 1.3 (or unset) minimum; here the same rules give field-path errors.
 * TLS 1.3 suites are not configurable in Go (it always offers its three), so they are not
 * here either: every server keeps OpenSSL's TLS 1.3 suites whatever `ciphers` says.
 */
import { type FieldError, FieldPath, fieldError } from '../errors';
import type { TLSConfiguration } from '../generated/types';

/** Upstream's minTLSVersion values -> Node's `minVersion`. */
export const TLS_VERSIONS: ReadonlyMap<string, 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3'> = new Map([
  ['VersionTLS10', 'TLSv1'],
  ['VersionTLS11', 'TLSv1.1'],
  ['VersionTLS12', 'TLSv1.2'],
  ['VersionTLS13', 'TLSv1.3'],
]);

/**
 * Go's TLS 1.0-1.2 cipher suite names (secure and insecure lists of Go 1.22) -> OpenSSL's
 * names. An OpenSSL build may lack some (RC4, 3DES): a server then offers the others.
 */
export const GO_CIPHER_SUITES: ReadonlyMap<string, string> = new Map([
  // tls.CipherSuites()
  ['TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA', 'ECDHE-ECDSA-AES128-SHA'],
  ['TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA', 'ECDHE-ECDSA-AES256-SHA'],
  ['TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA', 'ECDHE-RSA-AES128-SHA'],
  ['TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA', 'ECDHE-RSA-AES256-SHA'],
  ['TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256', 'ECDHE-ECDSA-AES128-GCM-SHA256'],
  ['TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384', 'ECDHE-ECDSA-AES256-GCM-SHA384'],
  ['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', 'ECDHE-RSA-AES128-GCM-SHA256'],
  ['TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384', 'ECDHE-RSA-AES256-GCM-SHA384'],
  ['TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256', 'ECDHE-RSA-CHACHA20-POLY1305'],
  ['TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256', 'ECDHE-ECDSA-CHACHA20-POLY1305'],
  // tls.InsecureCipherSuites()
  ['TLS_RSA_WITH_RC4_128_SHA', 'RC4-SHA'],
  ['TLS_RSA_WITH_3DES_EDE_CBC_SHA', 'DES-CBC3-SHA'],
  ['TLS_RSA_WITH_AES_128_CBC_SHA', 'AES128-SHA'],
  ['TLS_RSA_WITH_AES_256_CBC_SHA', 'AES256-SHA'],
  ['TLS_RSA_WITH_AES_128_CBC_SHA256', 'AES128-SHA256'],
  ['TLS_RSA_WITH_AES_128_GCM_SHA256', 'AES128-GCM-SHA256'],
  ['TLS_RSA_WITH_AES_256_GCM_SHA384', 'AES256-GCM-SHA384'],
  ['TLS_ECDHE_ECDSA_WITH_RC4_128_SHA', 'ECDHE-ECDSA-RC4-SHA'],
  ['TLS_ECDHE_RSA_WITH_RC4_128_SHA', 'ECDHE-RSA-RC4-SHA'],
  ['TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA', 'ECDHE-RSA-DES-CBC3-SHA'],
  ['TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256', 'ECDHE-ECDSA-AES128-SHA256'],
  ['TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256', 'ECDHE-RSA-AES128-SHA256'],
]);

/** Go's TLS 1.3 suite names: known to upstream's name map, never configurable. */
const GO_TLS13_SUITES = new Set([
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
]);

/** OpenSSL's TLS 1.3 suites, offered by every server whatever `ciphers` says (as Go's). */
const OPENSSL_TLS13_SUITES = 'TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256';

/** Problems with `tlsConfiguration`; `field` is where it sits. */
export function validateTlsConfiguration(
  tls: TLSConfiguration | undefined,
  field: FieldPath = FieldPath.of('spec', 'configuration', 'tlsConfiguration'),
): FieldError[] {
  if (!tls) return [];
  const errs: FieldError[] = [];
  const min = tls.minTLSVersion;
  if (min !== undefined && min !== '' && !TLS_VERSIONS.has(min))
    errs.push(
      fieldError(
        field.child('minTLSVersion'),
        `Unsupported value: ${JSON.stringify(min)}: supported values: "${[...TLS_VERSIONS.keys()].join('", "')}"`,
        'FieldValueNotSupported',
      ),
    );
  const ciphers = tls.ciphers ?? [];
  if (ciphers.length > 0 && (min === undefined || min === '' || min === 'VersionTLS13')) {
    errs.push(
      fieldError(
        field.child('ciphers'),
        `You cannot specify ciphers when ${field}.minTLSVersion is empty or VersionTLS13`,
        'FieldValueNotSupported',
      ),
    );
    return errs;
  }
  ciphers.forEach((c, i) => {
    if (typeof c !== 'string' || (!GO_CIPHER_SUITES.has(c) && !GO_TLS13_SUITES.has(c)))
      errs.push(
        fieldError(
          field.child('ciphers').index(i),
          `${JSON.stringify(c)} is not a valid cipher`,
          'FieldValueNotSupported',
        ),
      );
  });
  return errs;
}

/** What a Node TLS server takes from the configuration. */
export interface TlsProtocolOptions {
  minVersion: 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3';
  /** OpenSSL cipher list; undefined: Node's default list. */
  ciphers?: string;
}

/**
 * The server options of a (validated) `tlsConfiguration`: upstream's default minimum is
 * TLS 1.2 with Go's default suites (here: Node's defaults); listed ciphers become OpenSSL's
 * names, with the TLS 1.3 suites kept (TLS 1.3 names in the list change nothing, as in Go).
 */
export function tlsProtocolOptions(tls: TLSConfiguration | undefined): TlsProtocolOptions {
  const minVersion = TLS_VERSIONS.get(tls?.minTLSVersion ?? '') ?? 'TLSv1.2';
  const names = (tls?.ciphers ?? []).flatMap((c) => {
    const n = GO_CIPHER_SUITES.get(c);
    return n ? [n] : [];
  });
  // Upstream: no known name listed means Go's defaults.
  if (names.length === 0) return { minVersion };
  return { minVersion, ciphers: `${OPENSSL_TLS13_SUITES}:${names.join(':')}` };
}
