/**
 * External export links (upstream's links.go): which Ingress leads to virt-exportproxy
 * (default backend, or a rule's path) and its TLS Secret; which certificate of that
 * Secret is reported for the host (the matching leaf and its issuer, a wildcard, else
 * every valid certificate); and the controller's `links.external` and manifest ConfigMap
 * keys when the proxy has a host.
 */
// biome-ignore-all lint/suspicious/noExplicitAny: the recorded objects are read as loose JSON
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../../src/controllers/common/pod';
import {
  certForHost,
  exportProxyIngress,
} from '../../../../src/controllers/virt-controller/export/external-link';
import { createCA, createLeaf } from '../../../../src/controllers/virt-operator/certificates';
import { exp, harness, VM_SOURCE } from './export-harness';

const ingress = (spec: Record<string, unknown>, name = 'i') =>
  ({ metadata: { name, namespace: 'kubevirt' }, spec }) as any;
const toService = (service: string, host = 'export.example') =>
  ingress({
    rules: [
      {
        host,
        http: { paths: [{ path: '/', backend: { service: { name: service, port: { number: 443 } } } }] },
      },
    ],
  });

describe('the Ingress to virt-exportproxy', () => {
  it("takes a rule's host whose path leads to the proxy, skipping other Ingresses", () => {
    expect(
      exportProxyIngress([toService('cdi-uploadproxy', 'up.example'), toService('virt-exportproxy')]),
    ).toEqual({
      host: 'export.example',
    });
    expect(exportProxyIngress([toService('web')])).toBeUndefined();
    expect(exportProxyIngress([])).toBeUndefined();
  });

  it("with a default backend: the first rule's host, only when that backend is the proxy", () => {
    const byDefault = (name: string) =>
      ingress({
        defaultBackend: { service: { name, port: { number: 443 } } },
        rules: [{ host: 'first.example' }, { host: 'second.example' }],
        tls: [{ hosts: ['first.example'] }, { hosts: ['first.example'], secretName: 'export-tls' }],
      });
    expect(exportProxyIngress([byDefault('virt-exportproxy')])).toEqual({
      host: 'first.example',
      tlsSecret: 'export-tls',
    });
    // A default backend elsewhere wins over a path to the proxy (upstream's order).
    const mixed = byDefault('web');
    mixed.spec.rules[0].http = { paths: [{ backend: { service: { name: 'virt-exportproxy' } } }] };
    expect(exportProxyIngress([mixed])).toBeUndefined();
  });
});

describe('the Ingress certificate reported for the host', () => {
  const now = new Date();
  const pem = (s: string) => s.trim();

  it('the leaf naming the host (by DNS name or wildcard) followed by its issuer', async () => {
    const ca = await createCA('ingress-ca', now, 86_400_000);
    const other = await createLeaf(
      ca,
      { commonName: 'other', dnsNames: ['other.example'], usage: 'server' },
      now,
      3_600_000,
    );
    const leaf = await createLeaf(
      ca,
      { commonName: 'proxy', dnsNames: ['export.example'], usage: 'server' },
      now,
      3_600_000,
    );
    const bundle = [other.cert, leaf.cert, ca.cert].join('\n');
    expect(certForHost('export.example', bundle, now)).toBe(`${pem(leaf.cert)}\n${pem(ca.cert)}`);
    const wild = await createLeaf(
      ca,
      { commonName: 'wild', dnsNames: ['*.apps.example'], usage: 'server' },
      now,
      3_600_000,
    );
    expect(certForHost('export.apps.example', [wild.cert, ca.cert].join('\n'), now)).toBe(
      `${pem(wild.cert)}\n${pem(ca.cert)}`,
    );
  });

  it('no certificate names the host: every certificate valid now; nothing in an empty Secret', async () => {
    const ca = await createCA('ingress-ca', now, 86_400_000);
    const other = await createLeaf(
      ca,
      { commonName: 'other', dnsNames: ['other.example'], usage: 'server' },
      now,
      3_600_000,
    );
    expect(certForHost('export.example', `${other.cert}\n${ca.cert}`, now)).toBe(
      `${pem(other.cert)}\n${pem(ca.cert)}`,
    );
    // Two days on, both have ended.
    expect(
      certForHost('export.example', `${other.cert}\n${ca.cert}`, new Date(now.getTime() + 2 * 86_400_000)),
    ).toBe('');
    expect(certForHost('export.example', '', now)).toBe('');
  });
});

describe('the export controller with an external host', () => {
  const external = { host: 'export.example', cert: 'INGRESS-CERT\n' };

  it('writes the external host and CA into the manifest ConfigMap', async () => {
    const h = harness(exp(VM_SOURCE), { external });
    await h.c.reconcile('ns/e');
    const cm = h.created.find((x) => x.kind === 'ConfigMap')!.obj;
    expect(cm.data.external_host).toBe(
      'export.example/api/export.kubevirt.io/v1/namespaces/ns/virtualmachineexports/e',
    );
    expect(JSON.parse(cm.data.external_ca_cm)).toEqual({
      metadata: { name: 'export-ca-cm-e' },
      data: { 'ca.pem': 'INGRESS-CERT' },
    });
    // Without a host, neither key.
    const h2 = harness(exp(VM_SOURCE));
    await h2.c.reconcile('ns/e');
    expect(Object.keys(h2.created.find((x) => x.kind === 'ConfigMap')!.obj.data)).not.toContain(
      'external_host',
    );
  });

  it('is Ready with links.external: the same volumes and manifests under the proxy path, the Ingress cert', async () => {
    const h0 = harness(exp(VM_SOURCE), { external });
    await h0.c.reconcile('ns/e');
    const pod = {
      ...h0.created.find((x) => x.kind === 'Pod')!.obj,
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    } as Pod;
    const h = harness({ ...exp(VM_SOURCE), status: h0.statuses[0] }, { pods: [pod], external });
    await h.c.reconcile('ns/e');
    const base = 'https://export.example/api/export.kubevirt.io/v1/namespaces/ns/virtualmachineexports/e';
    const links = h.statuses[0].links;
    expect(links.external).toEqual({
      cert: 'INGRESS-CERT',
      manifests: [
        { type: 'all', url: `${base}/external/manifests/all` },
        { type: 'auth-header-secret', url: `${base}/external/manifests/secret` },
      ],
      volumes: [
        {
          name: 'disk',
          formats: [
            { format: 'raw', url: `${base}/volumes/disk/disk.img` },
            { format: 'gzip', url: `${base}/volumes/disk/disk.img.gz` },
          ],
        },
      ],
    });
    expect(links.internal.volumes[0].formats[0].url).toBe(
      'https://virt-export-e.ns.svc/volumes/disk/disk.img',
    );
    // No host: no external link.
    const h2 = harness({ ...exp(VM_SOURCE), status: h0.statuses[0] }, { pods: [pod] });
    await h2.c.reconcile('ns/e');
    expect(h2.statuses[0].links.external).toBeUndefined();
  });
});
