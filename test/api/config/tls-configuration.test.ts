/**
 * tlsConfiguration's validation (upstream's operator webhook rules, with field paths) and
 * its mapping from upstream's Go cipher names to OpenSSL's.
 */
import { describe, expect, it } from 'vitest';
import { GO_CIPHER_SUITES, tlsProtocolOptions } from '../../../src/api/config/tls-configuration';
import { validateKubeVirtConfiguration } from '../../../src/api/config/validate-configuration';
import type { TLSConfiguration } from '../../../src/api/generated/types';

const errors = (tlsConfiguration: TLSConfiguration) =>
  validateKubeVirtConfiguration({ tlsConfiguration }).map((e) => `${e.path}: ${e.message}`);
const base = 'spec.configuration.tlsConfiguration';

describe('tlsConfiguration', () => {
  it('refuses an unknown minTLSVersion and unknown cipher names, naming the field', () => {
    expect(errors({ minTLSVersion: 'VersionTLS14' })).toEqual([
      `${base}.minTLSVersion: Unsupported value: "VersionTLS14": supported values: "VersionTLS10", "VersionTLS11", "VersionTLS12", "VersionTLS13"`,
    ]);
    expect(
      errors({
        minTLSVersion: 'VersionTLS12',
        ciphers: ['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', 'ECDHE-RSA-AES128-GCM-SHA256', 'bogus'],
      }),
    ).toEqual([
      `${base}.ciphers[1]: "ECDHE-RSA-AES128-GCM-SHA256" is not a valid cipher`,
      `${base}.ciphers[2]: "bogus" is not a valid cipher`,
    ]);
  });

  it('refuses ciphers under a TLS 1.3 or unset minimum, as upstream', () => {
    for (const minTLSVersion of [undefined, 'VersionTLS13'])
      expect(errors({ minTLSVersion, ciphers: ['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256'] })).toEqual([
        `${base}.ciphers: You cannot specify ciphers when ${base}.minTLSVersion is empty or VersionTLS13`,
      ]);
    expect(errors({ minTLSVersion: 'VersionTLS13' })).toEqual([]);
  });

  it("maps to Node's options: TLS 1.2 by default, OpenSSL names with the TLS 1.3 suites kept", () => {
    expect(tlsProtocolOptions(undefined)).toEqual({ minVersion: 'TLSv1.2' });
    expect(tlsProtocolOptions({ minTLSVersion: 'VersionTLS10' })).toEqual({ minVersion: 'TLSv1' });
    expect(
      tlsProtocolOptions({
        minTLSVersion: 'VersionTLS12',
        ciphers: [
          'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256',
          'TLS_AES_128_GCM_SHA256',
          'TLS_RSA_WITH_AES_128_CBC_SHA',
        ],
      }),
    ).toEqual({
      minVersion: 'TLSv1.2',
      ciphers:
        'TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256:ECDHE-RSA-AES128-GCM-SHA256:AES128-SHA',
    });
  });

  it("every OpenSSL name in the table is one this Node's OpenSSL knows, or an RC4/3DES suite OpenSSL 3 dropped", async () => {
    const { getCiphers } = await import('node:tls');
    const openssl = new Set(getCiphers().map((c) => c.toUpperCase()));
    const missing = [...GO_CIPHER_SUITES.values()].filter((n) => !openssl.has(n));
    expect(
      missing.every((n) => /RC4|DES-CBC3/.test(n)),
      missing.join(','),
    ).toBe(true);
  });
});
