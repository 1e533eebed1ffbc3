/**
 * The KubeVirt CR's tlsConfiguration on every TLS server: virt-api (webhooks and
 * subresources share its listener), virt-handler's REST server and the metrics server.
 * A TLS 1.2 client is accepted under the default minimum and refused once the minimum is
 * VersionTLS13, live (as upstream, which reads the CR at every handshake); a cipher list
 * in upstream's Go names limits TLS 1.2 to those suites.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type { TLSConfiguration } from '../../../src/api/generated/types';
import { serveMetrics } from '../../../src/controllers/metrics/server';
import type { ObjectClient } from '../../../src/controllers/runtime/types';
import { startVirtApi } from '../../../src/controllers/virt-api/server';
import { serveHandlerRest } from '../../../src/controllers/virt-handler/rest-server';
import { type CertFiles, issue, makeCa } from '../../support/tls-certs';
import { waitFor } from '../../support/wait';

const dir = mkdtempSync(join(tmpdir(), 'kvts-tlscfg-'));
let tlsConfiguration: TLSConfiguration | undefined;
let client: CertFiles;
let caPem: Buffer;
const servers: Array<{ close(): Promise<void> }> = [];
const ports: Record<string, number> = {};

/** The protocol a handshake settles on, or the error code that ended it. */
function handshake(
  port: number,
  o: { maxVersion?: 'TLSv1.2' | 'TLSv1.3'; ciphers?: string } = {},
): Promise<string> {
  return new Promise((resolve) => {
    const s = connect({
      host: '127.0.0.1',
      port,
      ca: caPem,
      cert: readFileSync(client.cert),
      key: readFileSync(client.key),
      checkServerIdentity: () => undefined,
      minVersion: 'TLSv1.2',
      ...o,
    });
    s.once('secureConnect', () => {
      const cipher = s.getCipher().standardName;
      resolve(`${s.getProtocol()} ${cipher}`);
      s.end();
    });
    s.once('error', (e: NodeJS.ErrnoException) => resolve(`error ${e.code}`));
  });
}

beforeAll(async () => {
  const ca = makeCa(dir, 'ca');
  caPem = readFileSync(ca.cert);
  const serving = issue(dir, ca, 'serving', 'kubevirt.io:system:node:virt-handler', ['IP:127.0.0.1']);
  client = issue(dir, ca, 'client', 'kubevirt.io:system:client:virt-handler');
  const source = () => tlsConfiguration;
  const api = await startVirtApi({
    client: {} as ObjectClient,
    tls: serving,
    host: '127.0.0.1',
    port: 0,
    config: () => createClusterConfig({ tlsConfiguration }, { hostArchitecture: 'amd64' }),
    kubevirtNamespace: 'kubevirt',
    handler: { tls: { ...client, ca: ca.cert } },
    requestHeader: {
      clientCA: caPem.toString(),
      allowedNames: [],
      usernameHeaders: [],
      groupHeaders: [],
      extraHeaderPrefixes: [],
    },
  });
  const rest = await serveHandlerRest({
    host: '127.0.0.1',
    port: 0,
    tls: { ...serving, ca: ca.cert },
    tlsConfiguration: source,
    launchers: { launcherOf: async () => Promise.reject(new Error('none')) },
  });
  const metrics = await serveMetrics({
    sources: [],
    tls: { certFile: serving.cert, keyFile: serving.key },
    tlsConfiguration: source,
  });
  servers.push(api, rest, metrics);
  ports['virt-api'] = api.port;
  ports['virt-handler REST'] = rest.port;
  ports.metrics = metrics.port;
});
afterAll(async () => {
  for (const s of servers) await s.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('tlsConfiguration on the TLS servers', () => {
  it('accepts TLS 1.2 by default, refuses it once minTLSVersion is VersionTLS13 (live), TLS 1.3 still served', async () => {
    for (const [name, port] of Object.entries(ports))
      expect(await handshake(port, { maxVersion: 'TLSv1.2' }), name).toMatch(/^TLSv1\.2 /);
    tlsConfiguration = { minTLSVersion: 'VersionTLS13' };
    for (const [name, port] of Object.entries(ports)) {
      await waitFor(
        `${name} refusing TLS 1.2`,
        async () =>
          (await handshake(port, { maxVersion: 'TLSv1.2' })).startsWith('error') ? true : undefined,
        5_000,
        100,
      );
      expect(await handshake(port, { maxVersion: 'TLSv1.2' }), name).toBe(
        'error ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION',
      );
      expect(await handshake(port), name).toMatch(/^TLSv1\.3 /);
    }
  });

  it("offers only the listed ciphers (upstream's Go names) to TLS 1.2 clients", async () => {
    tlsConfiguration = {
      minTLSVersion: 'VersionTLS12',
      ciphers: ['TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384'],
    };
    for (const [name, port] of Object.entries(ports)) {
      await waitFor(
        `${name} following the new settings`,
        async () =>
          (await handshake(port, { maxVersion: 'TLSv1.2' })).startsWith('TLSv1.2') ? true : undefined,
        5_000,
        100,
      );
      expect(await handshake(port, { maxVersion: 'TLSv1.2' }), name).toBe(
        'TLSv1.2 TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384',
      );
      expect(
        await handshake(port, { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256' }),
        name,
      ).toBe('error ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE');
      // TLS 1.3's suites are not configurable (as in Go).
      expect(await handshake(port), name).toMatch(/^TLSv1\.3 /);
    }
    tlsConfiguration = undefined;
  });
});
