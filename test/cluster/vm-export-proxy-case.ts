/**
 * The export proxy on the real cluster (vm-export.test.ts runs it after its other cases,
 * the VM stopped): virt-exportproxy as the manifests install it Ready; an Ingress in the
 * install namespace routing a host to the `virt-exportproxy` Service, with a TLS Secret
 * holding a certificate for that host and its CA; a new export of the VM then carries
 * `links.external` (upstream's URLs under
 * `https://<host>/api/export.kubevirt.io/v1/namespaces/<ns>/virtualmachineexports/<name>`,
 * the Ingress's certificate chain). No Ingress controller runs here, so a pod (the
 * kubevirt-ts image's node) sends the external link's path to the proxy's Service
 * ClusterIP (verifying the proxy's certificate with the install's CA) and the internal
 * link's path to the export's own Service: both disk images hash to the claim's sha256;
 * through the proxy, no token is 401 (the export server's answer) and an unknown export
 * 404; `/external/manifests/all` gives DataVolumes importing from the proxy's URLs.
 */
import type { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { NetworkingV1Api } from '@kubernetes/client-node';
import { expect } from 'vitest';
import type { ClusterInfo } from '../../scripts/cluster/state';
import type { VirtualMachineExport } from '../../src/api/generated/types';
import { createCA, createLeaf } from '../../src/controllers/virt-operator/certificates';

const KV = 'kubevirt';
const HOST = 'vmexport.kubevirt-ts.test';
const EXP = 'proxyexp';
const INGRESS = 'vmexport-proxy';
const TLS_SECRET = 'vmexport-proxy-tls';
const PROBE = 'export-proxy-probe';

/** What the case needs from its test file. */
export interface ExportProxyCaseContext {
  info: ClusterInfo;
  kc: KubeConfig;
  core: CoreV1Api;
  custom: CustomObjectsApi;
  namespace: string;
  vm: string;
  /** The claim's sha256, as the writer pod computed it, and its size. */
  volumeSha: string;
  imageBytes: number;
  virtctl: (args: string[]) => Promise<{ out: string; err: string }>;
  waitOrDiagnose: <T>(what: string, f: () => Promise<T | undefined>, ms: number) => Promise<T>;
}

/**
 * The probe: GETs each request (through a ClusterIP, verifying the server's certificate for
 * `servername` with the CA) and prints one JSON line of status, length and sha256 each.
 */
const PROBE_SCRIPT = `
const https = require('https'), crypto = require('crypto');
const reqs = JSON.parse(process.env.REQS);
(async () => {
  const out = [];
  for (const r of reqs) out.push(await new Promise((ok) => {
    https.get({ host: r.ip, port: 443, path: r.path, servername: r.servername, ca: process.env.CA,
      headers: r.token ? { 'x-kubevirt-export-token': r.token } : {} }, (res) => {
      const h = crypto.createHash('sha256'); let n = 0; const keep = [];
      res.on('data', (c) => { h.update(c); n += c.length; if (r.body) keep.push(c); });
      res.on('end', () => ok({ status: res.statusCode, bytes: n, sha: h.digest('hex'),
        ...(r.body ? { body: Buffer.concat(keep).toString() } : {}) }));
    }).on('error', (e) => ok({ error: e.message }));
  }));
  console.log(JSON.stringify(out));
})();
`;

/** Runs the case. */
export async function exportProxyCase(c: ExportProxyCaseContext): Promise<void> {
  const { core, custom, namespace: NS } = c;
  const net = c.kc.makeApiClient(NetworkingV1Api);
  const proxyPods = async () =>
    (await core.listNamespacedPod({ namespace: KV, labelSelector: 'kubevirt.io=virt-exportproxy' })).items;
  const proxyPod = await c
    .waitOrDiagnose(
      'virt-exportproxy Ready',
      async () =>
        (await proxyPods()).find((p) =>
          p.status?.conditions?.some((x) => x.type === 'Ready' && x.status === 'True'),
        ),
      180_000,
    )
    .catch(async (e) => {
      const pods = await proxyPods();
      const logs = await Promise.all(
        pods.map((p) =>
          core
            .readNamespacedPodLog({ name: p.metadata?.name ?? '', namespace: KV, tailLines: 30 })
            .catch(String),
        ),
      );
      throw new Error(`${e}
proxy pods: ${JSON.stringify(pods.map((p) => p.status))}
${logs.join('\n')}`);
    });
  expect(proxyPod.spec?.containers[0]?.args?.[0]).toBe('virt-exportproxy');

  // The Ingress's certificate: a leaf for the host from a CA of its own, both in the Secret.
  const now = new Date();
  const ingressCa = await createCA('ingress-ca.kubevirt-ts.test', now, 86_400_000);
  const leaf = await createLeaf(
    ingressCa,
    { commonName: HOST, dnsNames: [HOST], usage: 'server' },
    now,
    3_600_000,
  );
  await core.createNamespacedSecret({
    namespace: KV,
    body: {
      metadata: { name: TLS_SECRET },
      type: 'kubernetes.io/tls',
      stringData: { 'tls.crt': `${leaf.cert.trim()}\n${ingressCa.cert.trim()}\n`, 'tls.key': leaf.key },
    },
  });
  await net.createNamespacedIngress({
    namespace: KV,
    body: {
      metadata: { name: INGRESS },
      spec: {
        tls: [{ hosts: [HOST], secretName: TLS_SECRET }],
        rules: [
          {
            host: HOST,
            http: {
              paths: [
                {
                  path: '/',
                  pathType: 'Prefix',
                  backend: { service: { name: 'virt-exportproxy', port: { number: 443 } } },
                },
              ],
            },
          },
        ],
      },
    },
  });
  try {
    await c.virtctl(['vmexport', 'create', EXP, '--vm', c.vm]);
    const ready = await c.waitOrDiagnose(
      'the export Ready with its external link',
      async () => {
        const e = (await custom
          .getNamespacedCustomObject({
            group: 'export.kubevirt.io',
            version: 'v1',
            plural: 'virtualmachineexports',
            namespace: NS,
            name: EXP,
          })
          .catch(() => undefined)) as VirtualMachineExport | undefined;
        return e?.status?.phase === 'Ready' && e.status.links?.external ? e : undefined;
      },
      240_000,
    );
    const base = `https://${HOST}/api/export.kubevirt.io/v1/namespaces/${NS}/virtualmachineexports/${EXP}`;
    expect(ready.status?.links?.external).toEqual({
      cert: `${leaf.cert.trim()}\n${ingressCa.cert.trim()}`,
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

    // From a pod: the external link's path to the proxy's ClusterIP, the internal one to the export's.
    const ip = async (ns: string, name: string) =>
      (await core.readNamespacedService({ name, namespace: ns })).spec?.clusterIP ?? '';
    const proxyIp = await ip(KV, 'virt-exportproxy');
    const exportIp = await ip(NS, `virt-export-${EXP}`);
    const secret = await core.readNamespacedSecret({ name: `secret-${EXP}`, namespace: NS });
    const token = Buffer.from(secret.data?.token ?? '', 'base64').toString();
    const caBundle = (await core.readNamespacedConfigMap({ name: 'kubevirt-ca', namespace: KV })).data?.[
      'ca-bundle'
    ];
    const pathOf = (url: string) => new URL(url).pathname;
    const viaProxy = { ip: proxyIp, servername: `virt-exportproxy.${KV}.svc` };
    const external = ready.status!.links!.external!;
    const internal = ready.status!.links!.internal!;
    const reqs = [
      { ...viaProxy, path: pathOf(external.volumes![0]!.formats![0]!.url), token },
      {
        ip: exportIp,
        servername: `virt-export-${EXP}.${NS}.svc`,
        path: pathOf(internal.volumes![0]!.formats![0]!.url),
        token,
      },
      { ...viaProxy, path: pathOf(external.volumes![0]!.formats![0]!.url) },
      {
        ...viaProxy,
        path: pathOf(external.volumes![0]!.formats![0]!.url).replace(`/${EXP}/`, '/no-such-export/'),
        token,
      },
      { ...viaProxy, path: pathOf(external.manifests![0]!.url), token, body: true },
    ];
    await core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: PROBE },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          containers: [
            {
              name: 'probe',
              image: c.info.images['kubevirt-ts'] ?? '',
              imagePullPolicy: 'Never',
              command: ['node', '-e', PROBE_SCRIPT],
              env: [
                { name: 'REQS', value: JSON.stringify(reqs) },
                { name: 'CA', value: caBundle ?? '' },
              ],
            },
          ],
        },
      },
    });
    await c.waitOrDiagnose(
      'the probe pod finished',
      async () => {
        const p = await core.readNamespacedPod({ name: PROBE, namespace: NS });
        return ['Succeeded', 'Failed'].includes(p.status?.phase ?? '') ? p : undefined;
      },
      180_000,
    );
    const log = await core.readNamespacedPodLog({ name: PROBE, namespace: NS });
    const [proxied, direct, noToken, unknown, manifests] = JSON.parse(
      String(log).trim().split('\n').pop()!,
    ) as Array<{
      status?: number;
      bytes?: number;
      sha?: string;
      body?: string;
      error?: string;
    }>;
    process.stderr.write(
      `[vm-export] through virt-exportproxy ${proxyIp}: ${JSON.stringify({ ...proxied, body: undefined })}; direct ${exportIp}: ${JSON.stringify(direct)}\n`,
    );
    expect(proxied).toMatchObject({ status: 200, bytes: c.imageBytes, sha: c.volumeSha });
    expect(direct).toMatchObject({ status: 200, sha: c.volumeSha });
    expect(noToken?.status).toBe(401);
    expect(unknown?.status).toBe(404);
    expect(manifests?.status).toBe(200);
    const list = JSON.parse(manifests?.body ?? '{}') as {
      items: Array<{
        kind: string;
        data?: Record<string, string>;
        spec?: { source?: { http?: { url?: string } } };
      }>;
    };
    expect(list.items.map((i) => i.kind)).toEqual(['ConfigMap', 'VirtualMachine', 'DataVolume']);
    expect(list.items[0]?.data?.['ca.pem']).toBe(external.cert);
    expect(list.items[2]?.spec?.source?.http?.url).toBe(`${base}/volumes/disk/disk.img.gz`);
  } finally {
    await core.deleteNamespacedPod({ name: PROBE, namespace: NS }).catch(() => {});
    await c.virtctl(['vmexport', 'delete', EXP]).catch(() => {});
    await net.deleteNamespacedIngress({ name: INGRESS, namespace: KV }).catch(() => {});
    await core.deleteNamespacedSecret({ name: TLS_SECRET, namespace: KV }).catch(() => {});
  }
}
