/**
 * bench:node — the node side with a real guest under emulation, on the embedded store:
 * VM created -> tiny guest's boot marker on the launcher's console socket (the whole
 * stack: controller, pod runtime, launcher process, handler, libvirt), against a raw
 * `virsh create` of the same domain XML (renamed, its socket paths moved) to the same
 * marker; and the launcher's memory while its guest runs. Needs the CLI build
 * (`npm run build`, or KUBEVIRT_TS_CLI_ENTRY) and the test guest.
 *
 * Stack and virsh runs alternate, so both see the same host load; each run also records
 * when QEMU appeared (libvirt's pid file), which splits the time into "until QEMU runs"
 * (what the stack adds) and "QEMU to marker" (the guest's boot under TCG, which the
 * stack should not change).
 */
import { execFileSync, spawn } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launcherSocketPath } from '../src/controllers/launcher-protocol/paths';
import { shortDir } from '../src/controllers/launcher-protocol/short-dir';
import { EmbeddedStore } from '../src/controllers/runtime/embedded/store';
import { VirtualMachineType } from '../src/controllers/runtime/resources';
import type { KubeObject } from '../src/controllers/runtime/types';
import { findLibvirtDaemon } from '../src/controllers/virt-launcher/libvirt-daemons';
import {
  cliBuilt,
  cliEntry,
  destroyDomains,
  LIBVIRT_URI,
  NodeHarness,
  tinyGuestVm,
  waitFor,
} from '../test/e2e/node-harness';
import {
  available,
  BOOT_MARKER,
  initrdPath,
  kernelPath,
  SerialConsole,
  unavailableReason,
} from '../test/support/guest';
import { type Memory, median, memoryOf } from './memory';

/** Milestones of one start, ms after the create call (the first time each was seen). */
type Timeline = Record<string, number>;

/** Polls `probes` every 5 ms, recording when each first holds, until stopped. */
function sampler(t0: number, probes: Record<string, () => Promise<boolean> | boolean>) {
  const seen: Timeline = {};
  let busy = false;
  const timer = setInterval(async () => {
    if (busy) return;
    busy = true;
    try {
      for (const [k, probe] of Object.entries(probes)) {
        if (seen[k] === undefined && (await probe())) seen[k] = Math.round(performance.now() - t0);
      }
    } finally {
      busy = false;
    }
  }, 5);
  return () => {
    clearInterval(timer);
    return seen;
  };
}

/** The guest's own uptime when it printed the marker (ms): its kernel's boot, by its clock. */
function guestUptime(output: string): number {
  const m = new RegExp(`${BOOT_MARKER}[^\\n]*uptime=([0-9.]+)`).exec(output);
  return m ? Math.round(Number(m[1]) * 1000) : Number.NaN;
}

/** The whole marker line (the guest prints its uptime after the marker). */
const MARKER_LINE = new RegExp(`${BOOT_MARKER}[^\\n]*uptime=[0-9.]+\\s`);

/** Launchers run their own libvirt daemons (the default), or with BENCH_NODE_LIBVIRT=shared the system one. */
const OWN = process.env.BENCH_NODE_LIBVIRT !== 'shared';

/** The pod's libvirt-runtime directory (its own daemons' home), through the launcher's short link. */
const runtimeDir = (podsRoot: string, podUid: string) =>
  shortDir(join(podsRoot, podUid, 'volumes', 'kubernetes.io~empty-dir', 'libvirt-runtime'), 48);

const qemuPidFile = (domain: string, podsRoot: string, podUid: string) =>
  OWN
    ? join(runtimeDir(podsRoot, podUid), 'run', 'libvirt', 'qemu', 'run', `${domain}.pid`)
    : `/run/libvirt/qemu/${domain}.pid`;

/** The libvirt URI the stack's domain is on. */
const stackUri = (podsRoot: string, podUid: string) =>
  OWN
    ? `qemu+unix:///session?socket=${runtimeDir(podsRoot, podUid)}/run/libvirt/${findLibvirtDaemon().socket}`
    : LIBVIRT_URI;

/** RSS (MiB) of the launcher's own daemons (its children libvirtd/virtqemud and virtlogd). */
function daemonsRss(launcherPid: number): number {
  const out = execFileSync('ps', ['-o', 'rss=,comm=', '--ppid', String(launcherPid)], { encoding: 'utf8' });
  return out
    .trim()
    .split('\n')
    .filter((l) => /libvirtd|virtqemud|virtlogd/.test(l))
    .reduce((sum, l) => sum + Number(l.trim().split(/\s+/)[0]) / 1024, 0);
}

/** One VM through the whole stack: created, booted to the marker, stopped again. */
async function stackRun(
  store: EmbeddedStore,
  node: NodeHarness,
  name: string,
): Promise<{ timeline: Timeline; memory: Memory; xml: string; daemons: number }> {
  const t0 = performance.now();
  let podUid = '';
  const stop = sampler(t0, {
    'launcher-socket': () => podUid !== '' && existsSync(launcherSocketPath(node.podsRoot, podUid)),
    qemu: () => podUid !== '' && existsSync(qemuPidFile(`default_${name}`, node.podsRoot, podUid)),
  });
  await store.create(VirtualMachineType, tinyGuestVm(name, 'default') as KubeObject);
  const vmi = await waitFor('VMI on node', async () => {
    const v = await node.getVmi('default', name).catch(() => undefined);
    return v?.status?.nodeName ? v : undefined;
  });
  const pod = await waitFor('pod', () => node.podOf(vmi));
  podUid = pod.metadata?.uid ?? '';
  const pid = await waitFor('launcher', () => node.runtime?.pidOf(podUid));
  const con = await node.console(pod);
  const out = await con.waitFor(MARKER_LINE, 300_000);
  const timeline = {
    ...stop(),
    marker: Math.round(performance.now() - t0),
    'guest-uptime': guestUptime(out),
  };
  con.close();
  const memory = memoryOf(pid);
  const daemons = OWN ? daemonsRss(pid) : 0;
  const xml = execFileSync(
    'virsh',
    ['-c', stackUri(node.podsRoot, podUid), 'dumpxml', '--inactive', `default_${name}`],
    {
      encoding: 'utf8',
    },
  );
  const vm = await node.getVm('default', name);
  await store.update(VirtualMachineType, {
    ...vm,
    spec: { ...vm.spec, runStrategy: 'Halted' },
  } as KubeObject);
  await waitFor(
    'stopped',
    async () => (await node.getVm('default', name)).status?.printableStatus === 'Stopped',
    180_000,
  );
  return { timeline, memory, xml, daemons };
}

/** The same domain through `virsh create`: renamed, no UUID, sockets under a fresh dir. */
async function virshRun(xml: string, name: string): Promise<Timeline> {
  const dir = mkdtempSync(join(tmpdir(), 'kvts-bench-virsh-'));
  chmodSync(dir, 0o777);
  let x = xml.replace(/<name>[^<]*<\/name>/, `<name>${name}</name>`).replace(/<uuid>[^<]*<\/uuid>/, '');
  x = x.replace(/<entry name='uuid'>[^<]*<\/entry>/, '');
  // The harness's image store is gone: boot the same kernel and initrd from the guest build.
  x = x.replace(/<kernel>[^<]*<\/kernel>/, `<kernel>${realpathSync(kernelPath)}</kernel>`);
  x = x.replace(/<initrd>[^<]*<\/initrd>/, `<initrd>${realpathSync(initrdPath)}</initrd>`);
  let n = 0;
  x = x.replace(/path='([^']+)'/g, (_m, p: string) =>
    p.startsWith('/dev') ? `path='${p}'` : `path='${dir}/s${n++}'`,
  );
  x = x.replace(/socket='([^']+)'/g, () => `socket='${dir}/s${n++}'`);
  // The serial console's log file was in the launcher's private directory, gone with it.
  x = x.replace(/<log file='[^']+'/g, () => `<log file='${dir}/log${n++}'`);
  const serial = /<serial type='unix'>\s*<source mode='bind' path='([^']+)'/.exec(x)?.[1];
  if (!serial) throw new Error('no unix serial console in the domain XML');
  const file = join(dir, 'domain.xml');
  writeFileSync(file, x);
  try {
    const t0 = performance.now();
    const stop = sampler(t0, { qemu: () => existsSync(`/run/libvirt/qemu/${name}.pid`) });
    const virsh = spawn('virsh', ['-c', LIBVIRT_URI, 'create', file], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    virsh.stderr.on('data', (d) => {
      err += d;
    });
    const code = await new Promise<number | null>((r) => virsh.once('exit', r));
    if (code !== 0) throw new Error(`virsh create: ${err}`);
    // virsh returns once QEMU runs with its CPUs resumed: connect as soon as it does.
    const returned = Math.round(performance.now() - t0);
    const con = await SerialConsole.connect(serial, 60_000);
    const out = await con.waitFor(MARKER_LINE, 300_000);
    const timeline = {
      ...stop(),
      'virsh-returned': returned,
      marker: Math.round(performance.now() - t0),
      'guest-uptime': guestUptime(out),
    };
    con.close();
    return timeline;
  } finally {
    spawn('virsh', ['-c', LIBVIRT_URI, 'destroy', name], { stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  }
}

const col = (ts: Timeline[], k: string) => ts.map((t) => t[k] ?? Number.NaN);

async function main(): Promise<void> {
  if (!available()) throw new Error(unavailableReason);
  if (!cliBuilt()) throw new Error(`the CLI is not built (${cliEntry()}): run npm run build`);
  const runs = Number(process.env.BENCH_NODE_RUNS ?? 5);
  const store = await EmbeddedStore.open();
  const node = new NodeHarness({ client: store, nodeName: `bench-node-${process.pid}`, ownLibvirt: OWN });
  await node.start();
  const stack: Timeline[] = [];
  const virsh: Timeline[] = [];
  const mem: Memory[] = [];
  const daemons: number[] = [];
  try {
    // A first, unmeasured start warms the page cache and libvirt's capabilities cache.
    const warm = await stackRun(store, node, `bench-${process.pid}-warm`);
    for (let i = 0; i < runs; i++) {
      const s = await stackRun(store, node, `bench-${process.pid}-${i}`);
      stack.push(s.timeline);
      mem.push(s.memory);
      daemons.push(s.daemons);
      virsh.push(await virshRun(warm.xml, `kvts-bench-virsh-${process.pid}-${i}`));
    }
  } finally {
    await node.close(`default_bench-${process.pid}`);
    await store.close?.();
    destroyDomains(`kvts-bench-virsh-${process.pid}`);
  }
  const c = median(col(stack, 'marker'));
  const w = median(col(virsh, 'marker'));
  const sq = median(col(stack, 'qemu'));
  const wq = median(col(virsh, 'qemu'));
  const boot = (ts: Timeline[]) => median(ts.map((t) => t.marker - t.qemu));
  const load = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  console.log(
    `runs: ${runs}, stack and virsh alternating (medians); load average ${load}; libvirt: ${OWN ? "each launcher's own daemons" : 'the shared system daemon'}`,
  );
  console.log(`VM created -> boot marker (whole stack): ${col(stack, 'marker').join(', ')} ms`);
  console.log(`virsh create -> boot marker (same domain): ${col(virsh, 'marker').join(', ')} ms`);
  console.log(
    `until QEMU runs: stack ${sq} ms (launcher socket at ${median(col(stack, 'launcher-socket'))} ms), virsh ${wq} ms (virsh returned at ${median(col(virsh, 'virsh-returned'))} ms)`,
  );
  console.log(
    `QEMU -> marker: stack ${boot(stack)} ms, virsh ${boot(virsh)} ms; of which the guest kernel's own uptime at the marker: stack ${median(col(stack, 'guest-uptime'))} ms, virsh ${median(col(virsh, 'guest-uptime'))} ms`,
  );
  console.log(`stack overhead: ${c - w} ms (target <= 500 ms); before QEMU runs: ${sq - wq} ms`);
  console.log(
    `launcher memory with its guest running: RSS ${mem.map((m) => m.rss.toFixed(1)).join(', ')} MiB; PSS ${median(mem.map((m) => m.pss)).toFixed(1)} MiB; private (USS) ${median(mem.map((m) => m.uss)).toFixed(1)} MiB`,
  );
  const rss = median(mem.map((m) => m.rss));
  const drss = median(daemons);
  if (OWN)
    console.log(`the launcher's own libvirt daemons: RSS ${daemons.map((d) => d.toFixed(1)).join(', ')} MiB`);
  console.log(
    `BENCH node create_to_marker_ms=${c} virsh_ms=${w} launcher_rss_mb=${rss.toFixed(1)}${OWN ? ` launcher_daemons_rss_mb=${drss.toFixed(1)}` : ''}`,
  );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
