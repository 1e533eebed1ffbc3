/** The metrics server flags: --metrics-listen with optional TLS files, and up's --metrics-port. */
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseMetricsPort } from '../../src/cli/commands/up';
import { parseMetricsListen } from '../../src/cli/metrics-flags';

describe('parseMetricsListen', () => {
  it('parses address:port, IPv6 in brackets, and TLS files', () => {
    expect(parseMetricsListen({})).toBeUndefined();
    expect(parseMetricsListen({ metricsListen: '0.0.0.0:8443' })).toEqual({ host: '0.0.0.0', port: 8443 });
    expect(parseMetricsListen({ metricsListen: '[::1]:9000' })).toEqual({ host: '::1', port: 9000 });
    expect(
      parseMetricsListen({ metricsListen: 'localhost:8443', tlsCertFile: '/c.pem', tlsKeyFile: '/k.pem' }),
    ).toEqual({
      host: 'localhost',
      port: 8443,
      tls: { certFile: '/c.pem', keyFile: '/k.pem', fallback: expect.any(Function) },
    });
    expect(parseMetricsListen({ metricsListen: '0.0.0.0:8445', metricsListenRetry: '5' })).toEqual({
      host: '0.0.0.0',
      port: 8445,
      retryInUseMs: 5000,
    });
  });

  it('the TLS fallback is a self-signed server pair for the component (upstream fallback manager)', async () => {
    const listen = parseMetricsListen(
      { metricsListen: '0.0.0.0:8443', tlsCertFile: '/c.pem', tlsKeyFile: '/k.pem' },
      'virt-controller',
    );
    const pair = await listen?.tls?.fallback?.();
    const cert = new X509Certificate(pair?.cert ?? '');
    expect(cert.subject).toBe('CN=virt-controller');
    expect(cert.issuer).toBe('CN=fallback.virt-controller.kubevirt.io');
    expect(cert.subjectAltName).toBe('DNS:virt-controller');
    expect(createPrivateKey(pair?.key ?? '').asymmetricKeyType).toBe('ec');
  });

  it.each([
    [{ metricsListen: 'example.com:80' }, '--metrics-listen: "example.com:80" is not address:port'],
    [{ metricsListen: '127.0.0.1:70000' }, '--metrics-listen: "127.0.0.1:70000" is not address:port'],
    [{ metricsListen: '127.0.0.1' }, '--metrics-listen: "127.0.0.1" is not address:port'],
    [
      { metricsListen: '127.0.0.1:1', tlsCertFile: '/c.pem' },
      '--tls-cert-file and --tls-key-file go together',
    ],
    [{ tlsCertFile: '/c.pem', tlsKeyFile: '/k.pem' }, '--tls-cert-file needs --metrics-listen'],
    [{ metricsListenRetry: '5' }, '--metrics-listen-retry needs --metrics-listen'],
    [
      { metricsListen: '0.0.0.0:1', metricsListenRetry: '0' },
      '--metrics-listen-retry: "0" is not a whole number of seconds >= 1',
    ],
  ])('refuses %j', (flags, message) => {
    expect(() => parseMetricsListen(flags)).toThrow(message);
  });
});

describe('parseMetricsPort', () => {
  it('takes 1-65534 (the next port is the controller’s)', () => {
    expect(parseMetricsPort(undefined)).toBeUndefined();
    expect(parseMetricsPort('9100')).toBe(9100);
    for (const bad of ['0', '65535', '12a', '-1', ''])
      expect(() => parseMetricsPort(bad)).toThrow(
        `--metrics-port: ${JSON.stringify(bad)} is not a port from 1 to 65534`,
      );
  });
});
