/**
 * bench:node — the node side with a real guest under emulation, on the embedded store:
 * VM created -> tiny guest's boot marker on the launcher's console socket (the whole
 * stack: controller, pod runtime, launcher process, handler, libvirt), against a raw
 * `virsh create` of the same domain XML (renamed, its socket paths moved) to the same
 * marker; and the launcher's RSS while its guest runs. Needs the CLI build
 * (`npm run build`, or KUBEVIRT_TS_CLI_ENTRY) and the test guest.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedStore } from '../src/controllers/runtime/embedded/store';
import { VirtualMachineType } from '../src/controllers/runtime/resources';
import type { KubeObject } from '../src/controllers/runtime/types';
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

function rssMiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : Number.NaN;
}

async function stack(runs: number): Promise<{ ms: number[]; rss: number[]; xml: string }> {
  const store = await EmbeddedStore.open();
  const node = new NodeHarness({ client: store, nodeName: `bench-node-${process.pid}` });
  await node.start();
  const ms: number[] = [];
  const rss: number[] = [];
  let xml = '';
  try {
    for (let i = 0; i < runs; i++) {
      const name = `bench-${process.pid}-${i}`;
      const t0 = performance.now();
      await store.create(VirtualMachineType, tinyGuestVm(name, 'default') as KubeObject);
      const vmi = await waitFor('VMI on node', async () => {
        const v = await node.getVmi('default', name).catch(() => undefined);
        return v?.status?.nodeName ? v : undefined;
      });
      const pod = await waitFor('pod', () => node.podOf(vmi));
      const pid = await waitFor('launcher', () => node.runtime?.pidOf(pod.metadata?.uid ?? ''));
      const con = await node.console(pod);
      await con.waitFor(BOOT_MARKER, 300_000);
      ms.push(performance.now() - t0);
      con.close();
      rss.push(rssMiB(pid));
      if (i === 0) {
        xml = execFileSync('virsh', ['-c', LIBVIRT_URI, 'dumpxml', '--inactive', `default_${name}`], {
          encoding: 'utf8',
        });
      }
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
    }
  } finally {
    await node.close(`default_bench-${process.pid}`);
    await store.close?.();
  }
  return { ms, rss, xml };
}

async function rawVirsh(xml: string, runs: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const dir = mkdtempSync(join(tmpdir(), 'kvts-bench-virsh-'));
    chmodSync(dir, 0o777);
    const name = `kvts-bench-virsh-${process.pid}-${i}`;
    // Same domain, renamed, no UUID, every socket under a fresh directory.
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
    const serial = /<serial type='unix'>\s*<source mode='bind' path='([^']+)'/.exec(x)?.[1];
    if (!serial) throw new Error('no unix serial console in the domain XML');
    const file = join(dir, 'domain.xml');
    writeFileSync(file, x);
    const t0 = performance.now();
    const created = spawnSync('virsh', ['-c', LIBVIRT_URI, 'create', file], { encoding: 'utf8' });
    if (created.status !== 0) throw new Error(`virsh create: ${created.stderr}`);
    const con = await SerialConsole.connect(serial, 60_000);
    await con.waitFor(BOOT_MARKER, 300_000);
    out.push(performance.now() - t0);
    con.close();
    spawnSync('virsh', ['-c', LIBVIRT_URI, 'destroy', name], { stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  }
  return out;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main(): Promise<void> {
  if (!available()) throw new Error(unavailableReason);
  if (!cliBuilt()) throw new Error(`the CLI is not built (${cliEntry()}): run npm run build`);
  const runs = Number(process.env.BENCH_NODE_RUNS ?? 3);
  const s = await stack(runs);
  const v = await rawVirsh(s.xml, runs);
  destroyDomains(`kvts-bench-virsh-${process.pid}`);
  const c = Math.round(median(s.ms));
  const w = Math.round(median(v));
  const rss = median(s.rss);
  console.log(
    `runs: ${runs} (medians); load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')}`,
  );
  console.log(`VM created -> boot marker (whole stack): ${s.ms.map(Math.round).join(', ')} ms`);
  console.log(`virsh create -> boot marker (same domain): ${v.map(Math.round).join(', ')} ms`);
  console.log(`stack overhead: ${c - w} ms (target <= 500 ms)`);
  console.log(
    `launcher RSS with its guest running: ${s.rss.map((r) => r.toFixed(1)).join(', ')} MiB (target <= 40 MiB)`,
  );
  console.log(`BENCH node create_to_marker_ms=${c} virsh_ms=${w} launcher_rss_mb=${rss.toFixed(1)}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
