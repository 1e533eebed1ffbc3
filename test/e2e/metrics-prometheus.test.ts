/**
 * Metrics end to end with a real Prometheus, on local mode: `LocalNode` (what `kubevirt-ts
 * up` runs: embedded store, controller, pod runtime with its pod network on a test bridge,
 * handler, and both /metrics servers on loopback), the tiny guest booted under emulation
 * with an emptyDisk and local mode's default NIC (masquerade on the pod network), and
 * /usr/bin/prometheus scraping both every second. PromQL through Prometheus's HTTP API
 * checks what an operator's dashboards read: vCPU time growing, resident memory within the
 * guest's memory plus the launcher overhead, per-drive counters, per-interface counters
 * moving when a peer pod echoes 200,000 bytes through the guest, the running-phase count;
 * then every served family is checked against the catalog (name, type, labels).
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { describeText } from '../../src/cli/commands/describe';
import { applyObjects, loadAndAdmit } from '../../src/cli/local/apply';
import { ImageStore } from '../../src/cli/local/images';
import { LocalNode } from '../../src/cli/local/local-node';
import { statePaths } from '../../src/cli/local/state-dir';
import { PrometheusUsageSource } from '../../src/cli/ui/prometheus-usage';
import { ScrapeUsageSource } from '../../src/cli/ui/vm-usage';
import type { Pod } from '../../src/controllers/common/pod';
import { VmiResource } from '../../src/controllers/common/vmi-resource';
import { CONSOLE_SOCKET, podEmptyDirPath } from '../../src/controllers/launcher-protocol/paths';
import { shortDir } from '../../src/controllers/launcher-protocol/short-dir';
import { podDir } from '../../src/controllers/local/pod-runtime/pod-dirs';
import { netnsName, PodNetwork } from '../../src/controllers/local/pod-runtime/pod-network';
import { ComponentLog } from '../../src/controllers/logging/component-log';
import { ALL_METRICS, metricDef } from '../../src/controllers/metrics/catalog';
import { familyOf, parseExposition } from '../../src/controllers/metrics/exposition';
import { EventType, PodType, VirtualMachineType } from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { SerialConsole } from '../support/guest';
import { canTestNetworking, netSnapshot, networkGuestDir, scopedSnapshot } from '../support/net-snapshot';
import {
  ECHO_CLIENT,
  ECHO_SERVER,
  inNs,
  type NsProcess,
  repoRoot,
  startInNs,
} from '../support/netns-process';
import { prometheusBlocker, TestPrometheus } from '../support/prometheus';
import { e2eRun, waitFor } from './node-harness';

const guest = networkGuestDir();
const run = e2eRun('metrics scraped by a real Prometheus', () =>
  !canTestNetworking()
    ? "needs root and /usr/lib/cni (containernetworking-plugins) for the guest's pod network"
    : !guest
      ? 'no tiny guest of recipe 7 or later (networking): run scripts/guest/build.sh'
      : prometheusBlocker(),
);

describe.runIf(run)('metrics scraped by a real Prometheus (local mode, real guest with a NIC)', () => {
  const ns = 'default';
  const name = `e2e-prom-${process.pid}`;
  const sel = `namespace="${ns}",name="${name}"`;
  const tag = process.pid % 10000;
  const bridge = `kvtsm${tag}`;
  const subnet = '10.244.91.0/24';
  const nodeName = `node-prom-${process.pid}`;
  const peerUid = `dddd${tag.toString(16).padStart(4, '0')}-0000-4000-8000-000000000003`;
  let state = '';
  let scopedBefore: ReturnType<typeof scopedSnapshot>;
  let node: LocalNode | undefined;
  let peerNet: PodNetwork | undefined;
  let peerServer: NsProcess | undefined;
  let podIP = '';
  let prom: TestPrometheus | undefined;
  let launcherLog = '';
  /** Every component's JSON lines (LocalNode's loggers), as `up --v 4` writes them. */
  const componentLines: string[] = [];

  /** The single value of an instant query, waiting until Prometheus has one that satisfies `ok`. */
  const promValue = (q: string, ok: (v: number) => boolean = () => true) =>
    waitFor(`${q} in Prometheus`, async () => {
      const r = await prom?.query(q);
      return r?.length === 1 && ok(r[0].value) ? r[0].value : undefined;
    });
  const getVmi = () => node?.store.get<KubeObject & { status?: { phase?: string } }>(VmiResource, name, ns);

  beforeAll(async () => {
    scopedBefore = scopedSnapshot([], bridge);
    state = mkdtempSync(join(tmpdir(), 'kvts-prom-'));
    chmodSync(state, 0o755);
    const paths = statePaths(state);
    node = new LocalNode({
      paths,
      nodeName,
      podNetwork: { subnet, bridge },
      loggers: (c) =>
        new ComponentLog(
          c,
          4,
          new Writable({
            write(chunk, _e, cb) {
              componentLines.push(...String(chunk).split('\n').filter(Boolean));
              if (process.env.KUBEVIRT_TS_NODE_LOG) process.stdout.write(chunk);
              cb();
            },
          }),
        ).logger,
    });
    await node.start();
    new ImageStore(paths.images).import('kubevirt-ts/tiny-guest', guest ?? '');
    // A peer pod on the same bridge: the guest sends to it at boot; it echoes through the guest later.
    peerNet = new PodNetwork({ bridge, subnet, pluginDir: '/usr/lib/cni', dataDir: join(state, 'cni') });
    mkdirSync(join(state, 'peer'));
    const peer = await peerNet.setUp(peerUid, join(state, 'peer'));
    peerServer = await startInNs(netnsName(peerUid), process.execPath, ['-e', ECHO_SERVER, '7070'], 'ready');

    // examples/vm-tiny-net.yaml (local mode's default NIC: masquerade on the pod network) plus an emptyDisk.
    const vm = parse(readFileSync(join(repoRoot, 'examples', 'vm-tiny-net.yaml'), 'utf8'));
    vm.metadata.name = name;
    vm.spec.template.metadata.labels['kubevirt.io/vm'] = name;
    vm.spec.template.spec.terminationGracePeriodSeconds = 30;
    vm.spec.template.spec.domain.firmware.kernelBoot.kernelArgs += ` kvts.connect=${peer.ip}:7070`;
    vm.spec.template.spec.domain.devices.disks = [{ name: 'scratch', disk: { bus: 'virtio' } }];
    vm.spec.template.spec.volumes = [{ name: 'scratch', emptyDisk: { capacity: '16Mi' } }];
    const file = join(state, 'vm.yaml');
    writeFileSync(file, stringify(vm));
    await applyObjects(node.store, await loadAndAdmit([file], new ImageStore(paths.images), true));
    await waitFor('VMI Running', async () => (await getVmi())?.status?.phase === 'Running', 240_000);
    const pod = await waitFor('the launcher pod with its pod IP', async () => {
      const pods = await node?.store.list<Pod & KubeObject>(PodType, { namespace: ns });
      return pods?.items.find((p) => p.metadata?.name?.includes(name) && p.status?.podIP);
    });
    podIP = pod.status?.podIP ?? '';
    launcherLog = join(podDir(paths.pods, pod.metadata?.uid ?? ''), 'compute.log');
    // The guest is on the network once it has sent to the peer (its boot-time client).
    const sockets = podEmptyDirPath(paths.pods, pod.metadata?.uid ?? '', 'sockets');
    const serial = await SerialConsole.connect(join(shortDir(sockets), CONSOLE_SOCKET), 60_000);
    try {
      await serial.waitFor(/KUBEVIRT-TS-GUEST-SENT [^\n]*reply_bytes=\d+\r?\n/, 240_000);
    } finally {
      serial.close();
    }
    const urls = node.metricsUrls;
    prom = await TestPrometheus.start({
      'virt-handler': urls['virt-handler'] ?? '',
      'virt-controller': urls['virt-controller'] ?? '',
    });
  }, 400_000);

  afterAll(async () => {
    await prom?.stop();
    peerServer?.child.kill('SIGKILL');
    // Every launcher pod's network namespace, to check that none is left.
    const pods = (await node?.store.list(PodType, { namespace: ns }))?.items ?? [];
    const launcherNs = pods.map((p) => netnsName(p.metadata?.uid ?? ''));
    await node?.store.delete(VirtualMachineType, name, { namespace: ns }).catch(() => undefined);
    // The pod objects go at once; their namespaces when the pod runtime has torn them down.
    await waitFor(
      'launcher pods and their namespaces to go',
      async () =>
        (await node?.store.list(PodType, { namespace: ns }))?.items.length === 0 &&
        !netSnapshot().netns.some((n) => launcherNs.includes(n)),
      90_000,
    ).catch(() => undefined);
    await peerNet?.tearDown(peerUid, join(state, 'peer')).catch(() => undefined);
    await node?.stop();
    try {
      (await import('node:child_process')).execFileSync('ip', ['link', 'del', bridge], { stdio: 'ignore' });
    } catch {
      // never made
    }
    if (state) rmSync(state, { recursive: true, force: true });
    expect(scopedSnapshot([...launcherNs, netnsName(peerUid)], bridge)).toEqual(scopedBefore);
  }, 150_000);

  it('both targets are up in Prometheus', async () => {
    const t = await waitFor('both targets scraped', async () => {
      const all = await prom?.targets();
      return all?.length === 2 && all.every((x) => x.health === 'up') ? all : undefined;
    });
    expect(t.map((x) => x.job).sort()).toEqual(['virt-controller', 'virt-handler']);
  });

  it('kubevirt_vmi_vcpu_seconds_total grows between scrapes', async () => {
    const q = `sum(kubevirt_vmi_vcpu_seconds_total{${sel}})`;
    const first = await promValue(q, (v) => v > 0);
    const later = await promValue(q, (v) => v > first);
    expect(later).toBeGreaterThan(first);
    console.info(`prometheus: vcpu seconds ${first} then ${later}`);
    const vcpus = await prom?.query(`kubevirt_vmi_vcpu_seconds_total{${sel}}`);
    expect(vcpus?.map((s) => [s.metric.id, s.metric.node, s.metric.job])).toEqual([
      ['0', nodeName, 'virt-handler'],
    ]);
  });

  it('kubevirt_vmi_memory_resident_bytes is within the guest memory plus the launcher overhead', async () => {
    const rss = await promValue(`kubevirt_vmi_memory_resident_bytes{${sel}}`, (v) => v > 0);
    const overhead = await promValue(`kubevirt_vmi_launcher_memory_overhead_bytes{${sel}}`);
    const domain = await promValue(`kubevirt_vmi_memory_domain_bytes{${sel}}`);
    expect(domain).toBe(128 * 1024 * 1024);
    expect(rss).toBeGreaterThan(0);
    expect(rss).toBeLessThanOrEqual(domain + overhead);
    console.info(`prometheus: resident ${rss} bytes, domain ${domain}, overhead ${overhead}`);
  });

  it('per-drive storage counters: the guest kernel read the emptyDisk at boot', async () => {
    // The drive is served from the domain's start; the guest reads it once its kernel probes virtio.
    const reqs = await promValue(`kubevirt_vmi_storage_iops_read_total{${sel},drive="vda"}`, (v) => v > 0);
    const bytes = await promValue(
      `kubevirt_vmi_storage_read_traffic_bytes_total{${sel},drive="vda"}`,
      (v) => v > 0,
    );
    const drives = await prom?.query(`kubevirt_vmi_storage_iops_read_total{${sel}}`);
    expect(drives?.map((s) => s.metric.drive)).toEqual(['vda']);
    expect(bytes).toBeGreaterThanOrEqual(reqs * 512);
    console.info(`prometheus: vda ${reqs} read requests, ${bytes} bytes`);
  });

  it('per-interface network counters move when a peer echoes through the guest', {
    timeout: 300_000,
  }, async () => {
    // upstream's label is the VMI's interface name (the alias), not the tap.
    const rx = `kubevirt_vmi_network_receive_bytes_total{${sel},interface="default"}`;
    const tx = `kubevirt_vmi_network_transmit_bytes_total{${sel},interface="default"}`;
    const ifaces = await waitFor('the NIC series', async () => {
      const r = await prom?.query(`kubevirt_vmi_network_receive_bytes_total{${sel}}`);
      if (r?.length) return r;
      const served = (await (await fetch(`${node?.metricsUrls['virt-handler']}/metrics`)).text())
        .split('\n')
        .filter((l) => l.startsWith('kubevirt_vmi_network_receive_bytes_total'));
      throw new Error(`not in Prometheus; the handler serves ${JSON.stringify(served)}`);
    });
    expect(ifaces.map((x) => [x.metric.interface, x.metric.node])).toEqual([['default', nodeName]]);
    // The boot-time 64 KiB the guest sent to the peer (and got back) is already counted.
    const rx0 = await promValue(rx, (v) => v >= 65536);
    const tx0 = await promValue(tx, (v) => v >= 65536);
    const pkts0 = await promValue(`kubevirt_vmi_network_receive_packets_total{${sel},interface="default"}`);
    const sent = 200_000;
    const echoed = inNs(
      netnsName(peerUid),
      process.execPath,
      ['-e', ECHO_CLIENT, podIP, '8080', String(sent)],
      120_000,
    );
    expect(echoed.trim()).toBe(`echoed ${sent}`);
    // The guest received the 200,000 bytes and sent them back: both counters grow by at least that.
    const rx1 = await promValue(rx, (v) => v >= rx0 + sent);
    const tx1 = await promValue(tx, (v) => v >= tx0 + sent);
    const pkts1 = await promValue(
      `kubevirt_vmi_network_receive_packets_total{${sel},interface="default"}`,
      (v) => v > pkts0,
    );
    expect(rx1 - rx0).toBeGreaterThanOrEqual(sent);
    expect(tx1 - tx0).toBeGreaterThanOrEqual(sent);
    const served = (await (await fetch(`${node?.metricsUrls['virt-handler']}/metrics`)).text())
      .split('\n')
      .filter((l) => l.startsWith('kubevirt_vmi_network_'));
    // Every per-interface family, on the one NIC; no errors on a local bridge.
    expect(served.map((l) => l.replace(/\{.*\}/, '{}'))).toEqual(
      [
        'receive_bytes_total',
        'transmit_bytes_total',
        'receive_packets_total',
        'transmit_packets_total',
        'receive_errors_total',
        'transmit_errors_total',
        'receive_packets_dropped_total',
        'transmit_packets_dropped_total',
      ].map((f) => expect.stringMatching(new RegExp(`^kubevirt_vmi_network_${f}\\{\\} \\d+$`))),
    );
    expect(served.filter((l) => /_errors_total/.test(l)).map((l) => l.split(' ')[1])).toEqual(['0', '0']);
    console.info(`the handler serves:\n${served.join('\n')}`);
    console.info(
      `prometheus: interface default rx ${rx0} -> ${rx1} bytes, tx ${tx0} -> ${tx1} bytes, rx packets ${pkts0} -> ${pkts1} (echo of ${sent} bytes from ${podIP}'s peer)`,
    );
  });

  it("the web console's usage graphs: Prometheus's range queries and virt-handler's scrapes give this VM's CPU, memory and network", async () => {
    const fromProm = new PrometheusUsageSource(prom?.url ?? '');
    const series = await waitFor('CPU, memory and received bytes in the range queries', async () => {
      const s = await fromProm.series(ns, name);
      const has = (f: (p: (typeof s.points)[number]) => number | undefined) =>
        s.points.some((p) => (f(p) ?? 0) > 0);
      return has((p) => p.cpuCores) && has((p) => p.memoryBytes) && has((p) => p.rxBytesPerSecond)
        ? s
        : undefined;
    });
    expect(series.source).toBe('prometheus');
    // Guest memory in use is within the guest's memory; QEMU's resident size within it plus the overhead.
    const domain = 128 * 1024 * 1024;
    const bound =
      series.memory === 'guest'
        ? domain
        : domain + (await promValue(`kubevirt_vmi_launcher_memory_overhead_bytes{${sel}}`));
    for (const p of series.points)
      if (p.memoryBytes !== undefined) expect(p.memoryBytes).toBeLessThanOrEqual(bound);
    const fromHandler = new ScrapeUsageSource(
      async () => (await fetch(`${node?.metricsUrls['virt-handler']}/metrics`)).text(),
      1_000,
    );
    expect((await fromHandler.series(ns, name)).points).toEqual([]);
    await new Promise((r) => setTimeout(r, 1_500));
    const scraped = await fromHandler.series(ns, name);
    expect(scraped.points).toHaveLength(1);
    expect(scraped.points[0]?.cpuCores).toBeGreaterThan(0);
    expect(scraped.points[0]?.memoryBytes).toBeGreaterThan(0);
    console.info(
      `usage: prometheus ${series.points.length} points (memory: ${series.memory}), last ${JSON.stringify(series.points.at(-1))}; virt-handler ${JSON.stringify(scraped.points[0])}`,
    );
  });

  it('kubevirt_vmi_phase_count{phase="running"} equals the Running VMIs', async () => {
    const vmis = await node?.store.list<KubeObject & { status?: { phase?: string } }>(VmiResource, {});
    const running = vmis?.items.filter((v) => v.status?.phase === 'Running').length ?? 0;
    expect(running).toBe(1);
    expect(await promValue('sum(kubevirt_vmi_phase_count{phase="running"})')).toBe(running);
    expect(await promValue('kubevirt_virt_controller_leading_status')).toBe(1);
    expect(await promValue('kubevirt_virt_handler_ready_status')).toBe(1);
    expect(await promValue(`kubevirt_vm_info{${sel},status="Running",status_group="running"}`)).toBe(1);
  });

  /** The VMI's events as `describe vmi` shows them, once `want` reasons are all there. */
  const vmiEvents = async (uid: string, want: string[]) =>
    waitFor(`events ${want.join(', ')} on the VMI`, async () => {
      const all = await node?.store.list<KubeObject & { involvedObject?: { uid?: string }; reason?: string }>(
        EventType,
        { namespace: ns },
      );
      const mine = (all?.items ?? []).filter((e) => e.involvedObject?.uid === uid);
      if (want.every((r) => mine.some((e) => e.reason === r))) return mine;
      throw new Error(`the VMI has ${mine.map((e) => e.reason).join(', ') || 'no events'}`);
    });

  it('virt-handler records Created and Started on the VMI; describe vmi shows them', async () => {
    const vmi = await getVmi();
    const events = await vmiEvents(vmi?.metadata?.uid ?? '', ['Created', 'Started']);
    const text = describeText(vmi as KubeObject, events as never);
    expect(text).toMatch(/Normal\s+Created\s+\S+\s+virt-handler\s+VirtualMachineInstance defined\./);
    expect(text).toMatch(/Normal\s+Started\s+\S+\s+virt-handler\s+VirtualMachineInstance started\./);
  });

  it("JSON log lines: virt-handler's and the launcher's lines about the VMI carry its namespace, name and uid", async () => {
    const uid = (await getVmi())?.metadata?.uid;
    const vmiLine = { kind: 'VirtualMachineInstance', namespace: ns, name, uid };
    const handler = componentLines.map((l) => JSON.parse(l)).filter((l) => l.component === 'virt-handler');
    expect(handler.find((l) => l.reason === 'Started')).toMatchObject({
      ...vmiLine,
      level: 'info',
      node: nodeName,
      msg: 'VirtualMachineInstance started.',
    });
    // The launcher's stderr (the pod's log): every line of its own is JSON naming its VMI.
    const own = readFileSync(launcherLog, 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
      .filter((l) => l.component === 'virt-launcher');
    expect(own.length).toBeGreaterThan(0);
    for (const l of own)
      expect(l).toMatchObject({ ...vmiLine, level: expect.any(String), msg: expect.any(String) });
    console.info(`launcher log: ${own.length} JSON lines, e.g. ${JSON.stringify(own[0])}`);
  });

  it('every served family is in the catalog with its type and labels', async () => {
    const catalog = new Set(ALL_METRICS.map((m) => m.name));
    for (const url of [node?.metricsUrls['virt-handler'], node?.metricsUrls['virt-controller']]) {
      const text = await (await fetch(`${url}/metrics`)).text();
      const scrape = parseExposition(text);
      for (const [family, type] of scrape.types) {
        expect(catalog.has(family), `${family} served but not in the catalog`).toBe(true);
        expect(type, family).toBe(metricDef(family).type);
      }
      for (const s of scrape.samples) {
        const family = familyOf(s.name, scrape.types);
        expect(family, s.name).toBeDefined();
        const want = [...metricDef(family as string).labels].sort();
        const got = Object.keys(s.labels)
          .filter((l) => l !== 'le')
          .sort();
        expect(got, s.name).toEqual(want);
      }
    }
  });

  // upstream's stop: the handler signals the graceful shutdown, the guest powers off (Stopped),
  // the handler tells the launcher, which waits for it, to drop the domain (Deleted).
  it('stopping records ShuttingDown, Stopped and Deleted on the VMI, and drops its series', async () => {
    const vmi = await getVmi();
    const uid = vmi?.metadata?.uid ?? '';
    const vm = await node?.store.get<KubeObject & { spec?: object }>(VirtualMachineType, name, ns);
    await node?.store.update(VirtualMachineType, {
      ...vm,
      spec: { ...vm?.spec, runStrategy: 'Halted' },
    } as never);
    const events = await vmiEvents(uid, ['ShuttingDown', 'Stopped', 'Deleted']);
    console.info(`events on the VMI: ${events.map((e) => e.reason).join(', ')}`);
    const text = describeText(vmi as KubeObject, events as never);
    expect(text).toMatch(/Normal\s+ShuttingDown\s+\S+\s+virt-handler\s+Signaled Graceful Shutdown/);
    expect(text).toMatch(
      /Normal\s+Stopped\s+\S+\s+virt-handler\s+The VirtualMachineInstance was shut down\./,
    );
    expect(text).toMatch(/Normal\s+Deleted\s+\S+\s+virt-handler\s+Signaled Deletion/);
    await waitFor('the VMI series gone from the handler', async () => {
      const r = await prom?.query(`kubevirt_vmi_vcpu_seconds_total{${sel}}`);
      return r?.length === 0;
    });
    await waitFor('no running VMI counted', async () => {
      const r = await prom?.query('kubevirt_vmi_phase_count');
      const text = await (await fetch(`${node?.metricsUrls['virt-controller']}/metrics`)).text();
      const local = text.split('\n').filter((l) => l.startsWith('kubevirt_vmi_phase_count'));
      if (r?.some((x) => x.metric.phase === 'running' && x.value > 0))
        throw new Error(`prometheus ${JSON.stringify(r)} served ${JSON.stringify(local)}`);
      return true;
    });
  }, 200_000);
});
