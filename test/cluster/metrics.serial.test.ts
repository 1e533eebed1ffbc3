/**
 * Issue 18 on the real one-node cluster (real kubelet and containerd): kubevirt-ts
 * installed the upstream way (the operator manifest, then a KubeVirt CR), so every
 * component runs with the serving certificate the operator made for it. A real Prometheus
 * (Debian's) scrapes virt-handler and virt-controller over HTTPS, verifying each against
 * the install's CA bundle and the name in its certificate: virt-handler at the address
 * the `kubevirt-prometheus-metrics` Service lists (its EndpointSlices, as a ServiceMonitor
 * would find it; the dev cluster's pods are on the host network, so the address is the
 * node's own and is scraped as 127.0.0.1), virt-controller at its rendered port (on the
 * host network it declares none, see components/virt-controller.ts). After the tiny guest boots,
 * `kubevirt_vmi_phase_count{phase="running"}` equals the running VMIs and the guest's
 * vCPU, memory and network series have plausible values; virt-api's log names the VMI of
 * a subresource call and of an admission refusal.
 *
 * Serial, with its own cluster (up here, down at the end), as operator.serial.test.ts:
 * the parallel run's shared cluster has vm-tiny.test.ts's install of the same components
 * (one DaemonSet and host ports per node), which restarts them and the kubelet mid-run.
 */
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { down } from '../../scripts/cluster/down';
import type { ClusterInfo } from '../../scripts/cluster/state';
import { up } from '../../scripts/cluster/up';
import { repoRoot } from '../../scripts/gen-api';
import { clusterUnavailableReason, TEST_BRIDGE, TEST_POD_SUBNET, testStateDir } from '../support/cluster';
import { waitForCrdEstablished } from '../support/crd-established';
import { integration } from '../support/integration';
import { prometheusBlocker, TestPrometheus } from '../support/prometheus';
import { waitFor } from '../support/wait';
import {
  apiRequest,
  devOperatorManifest,
  getJson,
  kubectl,
  podsByComponent,
  secretCertFingerprint,
  servedFingerprint,
} from './operator-cluster';

const why = clusterUnavailableReason() ?? prometheusBlocker();
const enabled = integration('one-node cluster with Prometheus', why === undefined, why ?? '');
const KV_NS = 'kubevirt';
const NS = 'metrics-test';
const VM = 'vm-tiny-cd';
const sel = `namespace="${NS}",name="${VM}"`;

interface Slice {
  ports?: Array<{ name?: string; port: number }>;
  endpoints?: Array<{
    addresses: string[];
    conditions?: { ready?: boolean };
    targetRef?: { kind: string; name: string };
  }>;
}

describe.skipIf(!enabled)('Prometheus scraping the real one-node cluster over TLS', () => {
  let info: ClusterInfo;
  let dir: string;
  let prom: TestPrometheus | undefined;
  /** component -> host:port its metrics are served on, from the Service's EndpointSlices. */
  const targets = new Map<string, Set<string>>();
  const k = (...args: string[]) => kubectl(info, ...args);
  const log = (line: string) => process.stderr.write(`[metrics-cluster] ${line}\n`);
  /** The single value of an instant query, once Prometheus has one that satisfies `ok`. */
  const promValue = (q: string, ok: (v: number) => boolean = () => true) =>
    waitFor(
      `${q} in Prometheus`,
      async () => {
        const r = await prom?.query(q);
        return r?.length === 1 && ok(r[0].value) ? r[0].value : undefined;
      },
      180_000,
      1_000,
    );

  beforeAll(async () => {
    info = await up({ stateDir: testStateDir(), bridge: TEST_BRIDGE, podSubnet: TEST_POD_SUBNET, log });
    dir = mkdtempSync(join(tmpdir(), 'kvts-metrics-cluster-'));
    writeFileSync(join(dir, 'operator.yaml'), devOperatorManifest(info));
    writeFileSync(
      join(dir, 'kubevirt.yaml'),
      stringify({
        apiVersion: 'kubevirt.io/v1',
        kind: 'KubeVirt',
        metadata: { name: 'kubevirt', namespace: KV_NS },
        // TCG guests: KVM is unusable for a guest on these machines (docs/cluster.md).
        spec: { configuration: { developerConfiguration: { useEmulation: true } } },
      }),
    );
    k('apply', '-f', join(dir, 'operator.yaml'));
    await waitForCrdEstablished(k, 'kubevirts.kubevirt.io');
    k('apply', '-f', join(dir, 'kubevirt.yaml'));
    k('wait', '-n', KV_NS, 'kv', 'kubevirt', '--for', 'condition=Available', '--timeout=400s');
  }, 600_000);

  afterAll(async () => {
    await prom?.stop();
    rmSync(dir ?? '/nonexistent', { recursive: true, force: true });
    if (!info) return;
    const left = await down({ stateDir: info.stateDir, bridge: TEST_BRIDGE, log });
    expect(left).toEqual([]);
  }, 300_000);

  it('kubevirt-prometheus-metrics lists virt-handler at its metrics port; it and virt-controller serve the certificates the operator made for them', async () => {
    const byPod = new Map<string, string>();
    for (const [c, pods] of podsByComponent(info, KV_NS))
      for (const p of pods) {
        byPod.set(p.metadata.name, c);
        // Only the serving components carry upstream's label.
        expect(p.metadata.labels?.['prometheus.kubevirt.io'], p.metadata.name).toBe(
          c === 'virt-handler' || c === 'virt-controller' ? 'true' : undefined,
        );
      }
    const slices = await waitFor(
      'EndpointSlices with a ready virt-handler',
      () => {
        const s = getJson<{ items: Slice[] }>(
          info,
          'endpointslices',
          '-n',
          KV_NS,
          '-l',
          'kubernetes.io/service-name=kubevirt-prometheus-metrics',
        ).items;
        const ready = s.flatMap((x) => (x.endpoints ?? []).filter((e) => e.conditions?.ready));
        const kinds = new Set(ready.map((e) => byPod.get(e.targetRef?.name ?? '')));
        return kinds.has('virt-handler') ? s : undefined;
      },
      180_000,
      1_000,
    );
    for (const s of slices) {
      // Pods without a `metrics` port (virt-controller here) land in a slice with no ports.
      if (!s.ports?.length) {
        for (const e of s.endpoints ?? []) expect(byPod.get(e.targetRef?.name ?? '')).toBe('virt-controller');
        continue;
      }
      expect(s.ports.map((p) => p.name)).toEqual(['metrics']);
      const port = s.ports?.[0]?.port;
      for (const e of s.endpoints ?? []) {
        if (!e.conditions?.ready) continue;
        const component = byPod.get(e.targetRef?.name ?? '') ?? `unknown pod ${e.targetRef?.name}`;
        // Host network: the pod's address is the node's own; scraped on loopback.
        expect(e.addresses).toEqual([info.nodeIP]);
        targets.set(component, (targets.get(component) ?? new Set()).add(`127.0.0.1:${port}`));
      }
    }
    // virt-handler at its port (virt-api holds 8443 on the node). virt-controller declares no
    // port on the dev cluster (on the host network the scheduler would take it as a host
    // port and place one replica per node), so the Service lists it not; both its replicas
    // run and share 8445, the rendering's port.
    expect(Object.fromEntries([...targets].map(([c, t]) => [c, [...t]]))).toEqual({
      'virt-handler': ['127.0.0.1:8444'],
    });
    const controllers = podsByComponent(info, KV_NS).get('virt-controller') ?? [];
    expect(controllers.map((p) => p.status.phase)).toEqual(['Running', 'Running']);
    targets.set('virt-controller', new Set(['127.0.0.1:8445']));
    for (const [component, secret] of [
      ['virt-handler', 'kubevirt-virt-handler-server-certs'],
      ['virt-controller', 'kubevirt-controller-certs'],
    ] as const) {
      const port = Number([...(targets.get(component) ?? [])][0]?.split(':')[1]);
      const expected = secretCertFingerprint(info, KV_NS, secret);
      // The Secret may reach the pod after it started (mounted optional): then it serves its
      // fallback pair until the kubelet writes the files, which it picks up.
      const served = await waitFor(
        `${component} serving ${secret}`,
        async () => ((await servedFingerprint('127.0.0.1', port)) === expected ? expected : undefined),
        180_000,
        1_000,
      );
      expect(served).toBe(expected);
    }
  }, 400_000);

  it('Prometheus scrapes both over HTTPS verified against the install CA bundle', async () => {
    expect(targets.size, 'the Service test ran').toBe(2);
    const bundle = getJson<{ data: Record<string, string> }>(info, 'configmap', 'kubevirt-ca', '-n', KV_NS)
      .data['ca-bundle'];
    const caFile = join(dir, 'ca-bundle.crt');
    writeFileSync(caFile, bundle ?? '');
    // Each leaf chains to the bundle's CA and names the component (Prometheus checks both).
    const ca = new X509Certificate(bundle ?? '');
    for (const secret of ['kubevirt-virt-handler-server-certs', 'kubevirt-controller-certs']) {
      const s = getJson<{ data: Record<string, string> }>(info, 'secret', secret, '-n', KV_NS);
      expect(
        new X509Certificate(Buffer.from(s.data['tls.crt'] ?? '', 'base64')).checkIssued(ca),
        secret,
      ).toBe(true);
    }
    prom = await TestPrometheus.startJobs(
      [...targets].map(([component, t]) => ({
        name: component,
        targets: [...t],
        scheme: 'https' as const,
        tls: { caFile, serverName: component },
      })),
    );
    const up = await waitFor(
      'both targets up',
      async () => {
        const t = await prom?.targets();
        if (t?.length === 2 && t.every((x) => x.health === 'up')) return t;
        if (t?.some((x) => x.lastError)) log(`targets: ${JSON.stringify(t)}`);
        return undefined;
      },
      120_000,
      1_000,
    );
    expect(up.map((t) => t.job).sort()).toEqual(['virt-controller', 'virt-handler']);
    expect(await promValue('up{job="virt-handler"}')).toBe(1);
  }, 200_000);

  it('after the tiny guest boots, kubevirt_vmi_phase_count{phase="running"} equals the running VMIs', async () => {
    expect(prom, 'Prometheus runs').toBeDefined();
    k('create', 'namespace', NS);
    await waitFor(
      'the default service account',
      () => k('get', 'serviceaccount', 'default', '-n', NS, '-o', 'name').trim() === 'serviceaccount/default',
      60_000,
      500,
    ).catch(() => undefined);
    const vm = readFileSync(join(repoRoot, 'examples', 'vm-tiny-containerdisk.yaml'), 'utf8').replace(
      'namespace: default',
      `namespace: ${NS}`,
    );
    writeFileSync(join(dir, 'vm.yaml'), vm);
    k('apply', '-f', join(dir, 'vm.yaml'));
    const runningVmis = () =>
      getJson<{ items: Array<{ status?: { phase?: string } }> }>(info, 'vmi', '-A').items.filter(
        (v) => v.status?.phase === 'Running',
      ).length;
    await waitFor('the VMI Running', () => runningVmis() === 1 || undefined, 300_000, 1_000);
    const count = await promValue('sum(kubevirt_vmi_phase_count{phase="running"})', (v) => v >= 1);
    expect(count).toBe(runningVmis());
    const series = await prom?.query('kubevirt_vmi_phase_count{phase="running"}');
    expect(series?.map((s) => s.metric.job)).toEqual(['virt-controller']);
    log(`kubevirt_vmi_phase_count{phase="running"} ${count}, running VMIs ${runningVmis()}`);
  }, 400_000);

  it("the guest's own series: vCPU seconds grow, resident memory within its size, network counters", async () => {
    expect(prom, 'Prometheus runs').toBeDefined();
    const q = `sum(kubevirt_vmi_vcpu_seconds_total{${sel}})`;
    const first = await promValue(q, (v) => v > 0);
    const later = await promValue(q, (v) => v > first);
    expect(later).toBeGreaterThan(first);
    const vcpus = await prom?.query(`kubevirt_vmi_vcpu_seconds_total{${sel}}`);
    expect(vcpus?.map((s) => [s.metric.id, s.metric.node, s.metric.job])).toEqual([
      ['0', info.nodeName, 'virt-handler'],
    ]);
    const rss = await promValue(`kubevirt_vmi_memory_resident_bytes{${sel}}`, (v) => v > 0);
    const domain = await promValue(`kubevirt_vmi_memory_domain_bytes{${sel}}`);
    const overhead = await promValue(`kubevirt_vmi_launcher_memory_overhead_bytes{${sel}}`);
    expect(domain).toBe(128 * 1024 * 1024);
    expect(rss).toBeLessThanOrEqual(domain + overhead);
    // The pod network's NIC by the VMI's interface name; the guest's DHCP moved it at boot.
    const rx = await promValue(
      `kubevirt_vmi_network_receive_bytes_total{${sel},interface="default"}`,
      (v) => v > 0,
    );
    const tx = await promValue(
      `kubevirt_vmi_network_transmit_bytes_total{${sel},interface="default"}`,
      (v) => v > 0,
    );
    const packets = await promValue(
      `kubevirt_vmi_network_receive_packets_total{${sel},interface="default"}`,
      (v) => v > 0,
    );
    // Bytes per packet from one scrape (both series at the same instant): at least a bare ARP frame's 42.
    const perPacket = await promValue(
      `kubevirt_vmi_network_receive_bytes_total{${sel},interface="default"} / kubevirt_vmi_network_receive_packets_total{${sel},interface="default"}`,
    );
    expect(perPacket).toBeGreaterThanOrEqual(42);
    // Every network family the handler serves for the guest (what libvirt reported).
    const families = [
      ...new Set(
        ((await prom?.query(`{__name__=~"kubevirt_vmi_network_.+",${sel}}`)) ?? []).map(
          (s) => s.metric.__name__,
        ),
      ),
    ].sort();
    expect(families).toEqual(
      expect.arrayContaining([
        'kubevirt_vmi_network_receive_bytes_total',
        'kubevirt_vmi_network_receive_packets_total',
        'kubevirt_vmi_network_transmit_bytes_total',
        'kubevirt_vmi_network_transmit_packets_total',
      ]),
    );
    log(`network families: ${families.join(' ')}`);
    log(
      `vcpu seconds ${first} -> ${later}; resident ${rss} B (domain ${domain}, overhead ${overhead}); default rx ${rx} B ${packets} packets (${perPacket.toFixed(0)} B each at one scrape), tx ${tx} B`,
    );
  }, 400_000);

  it("virt-api's log names the VMI of a subresource call and of an admission refusal", async () => {
    const vmi = getJson<{ metadata: { uid: string } }>(info, 'vmi', VM, '-n', NS);
    // Through the API server's aggregator to virt-api; a dry run leaves the guest running.
    const pause = await apiRequest(
      info,
      'PUT',
      `/apis/subresources.kubevirt.io/v1/namespaces/${NS}/virtualmachineinstances/${VM}/pause`,
      { dryRun: ['All'] },
    );
    expect(pause.code).toBe(200);
    const bad = {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: 'refused', namespace: NS },
      // A disk with no volume of its name: only the webhook knows (the CRD schema lets it through).
      spec: {
        domain: {
          devices: { disks: [{ name: 'root', disk: {} }] },
          resources: { requests: { memory: '64Mi' } },
        },
      },
    };
    const refused = await apiRequest(
      info,
      'POST',
      `/apis/kubevirt.io/v1/namespaces/${NS}/virtualmachineinstances?dryRun=All`,
      bad,
    );
    expect(refused.code).toBe(422);
    const api = podsByComponent(info, KV_NS).get('virt-api')?.[0]?.metadata.name ?? '';
    const lines = await waitFor(
      "virt-api's lines for both",
      () => {
        const parsed = k('logs', '-n', KV_NS, api)
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as Record<string, unknown>);
        const call = parsed.find((l) => l.msg === `subresource pause on VirtualMachineInstance ${NS}/${VM}`);
        const adm = parsed.find(
          (l) => l.msg === `admission refused CREATE of VirtualMachineInstance ${NS}/refused`,
        );
        return call && adm ? { call, adm } : undefined;
      },
      60_000,
      1_000,
    );
    expect(lines.call).toMatchObject({
      component: 'virt-api',
      level: 'info',
      kind: 'VirtualMachineInstance',
      namespace: NS,
      name: VM,
      uid: vmi.metadata.uid,
      subresource: 'pause',
    });
    expect(lines.adm).toMatchObject({
      component: 'virt-api',
      kind: 'VirtualMachineInstance',
      namespace: NS,
      name: 'refused',
      // The API server gives the object its uid before admission, so even a CREATE's line has one.
      uid: expect.stringMatching(/^[0-9a-f-]{36}$/),
      operation: 'CREATE',
      webhook: '/virtualmachineinstances-validate-create',
    });
    expect(lines.adm.causes).toEqual([
      "spec.domain.devices.disks[0].name: spec.domain.devices.disks[0].Name 'root' not found.",
    ]);
    log(`virt-api lines: ${JSON.stringify(lines.call)} ${JSON.stringify(lines.adm)}`);
  }, 200_000);
});
