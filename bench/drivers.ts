/**
 * Driver benchmark. Figures:
 * - boot: time from `driver.sync(vmi)` to the tiny guest's boot marker on the serial
 *   socket (libvirt driver, qemu:///system, TCG), against `virsh create` of the very
 *   same domain XML to the same marker; medians of alternating runs;
 * - memory: driver heap per managed domain, for the fake driver (its in-memory host) and
 *   the libvirt driver (on test:///default; it keeps no per-domain state itself).
 * Ends with `BENCH drivers boot_ms=<n> virsh_boot_ms=<n>`.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { realpathSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { encodeDomain } from '../src/converter';
import { ensureSocketDirs, LibvirtDriver } from '../src/drivers/libvirt-driver';
import { FakeDriver, FakeHost, minimalVmi } from '../src/testing';
import { scratchPaths, tinyGuestVmi } from '../test/drivers/libvirt-driver/support';
import * as guest from '../test/support/guest';

const ROUNDS = Number(process.env.BENCH_DRIVER_ROUNDS ?? 3);
const NS = 'kvts-bench';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function waitMarker(path: string, t0: number): Promise<number> {
  const serial = await guest.SerialConsole.connect(path, 60_000);
  try {
    await serial.waitFor(guest.BOOT_MARKER, 180_000);
    return performance.now() - t0;
  } finally {
    serial.close();
  }
}

async function bootFigures(): Promise<{ driverMs: number[]; virshMs: number[] }> {
  const scratch = scratchPaths('kvts-bench-drv-');
  const paths = { ...scratch.paths, kernelBootDir: realpathSync(guest.guestDir) };
  const driver = await LibvirtDriver.connect({
    uri: 'qemu:///system',
    name: 'emulation',
    allowKvm: false,
    converterContext: { paths },
  });
  const driverMs: number[] = [];
  const virshMs: number[] = [];
  try {
    for (let i = 0; i < ROUNDS; i++) {
      // Through the driver: convert, plugins, define, start.
      const vmi = tinyGuestVmi(`kvts-bench-drv-${process.pid}-${i}`, NS);
      const ref = { namespace: NS, name: vmi.metadata?.name as string };
      let t0 = performance.now();
      await driver.sync(vmi, { useEmulation: true });
      const ep = await driver.consoleEndpoint(ref);
      driverMs.push(await waitMarker(ep.path as string, t0));
      await driver.delete(ref);

      // The same XML through virsh: rendered by the driver for a twin VMI, started with `virsh create`.
      const twin = tinyGuestVmi(`kvts-bench-virsh-${process.pid}-${i}`, NS);
      twin.metadata = { ...twin.metadata, uid: randomUUID() };
      const { domain } = await driver.render(twin, { useEmulation: true });
      await ensureSocketDirs(domain);
      const file = join(scratch.dir, `virsh-${i}.xml`);
      writeFileSync(file, encodeDomain(domain));
      const serialPath = domain.devices.serial?.[0]?.source?.path as string;
      t0 = performance.now();
      const r = spawnSync('virsh', ['-q', '-c', 'qemu:///system', 'create', file], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`virsh create failed: ${r.stderr}`);
      virshMs.push(await waitMarker(serialPath, t0));
      spawnSync('virsh', ['-q', '-c', 'qemu:///system', 'destroy', domain.name]);
      console.log(`round ${i + 1}: driver ${driverMs[i].toFixed(0)} ms, virsh ${virshMs[i].toFixed(0)} ms`);
    }
  } finally {
    await driver.close();
    rmSync(scratch.dir, { recursive: true, force: true });
  }
  return { driverMs, virshMs };
}

async function heapPerDomain(n: number, make: (i: number) => Promise<void>): Promise<number> {
  gc();
  const before = process.memoryUsage().heapUsed;
  for (let i = 0; i < n; i++) await make(i);
  gc();
  return (process.memoryUsage().heapUsed - before) / n;
}

async function memoryFigures(): Promise<{ fake: number; libvirt: number }> {
  const fakeDriver = new FakeDriver({ host: new FakeHost({ kvmUsable: true }) });
  const fake = await heapPerDomain(2000, async (i) => {
    await fakeDriver.sync(minimalVmi({ namespace: NS, name: `fake-${i}` }));
  });

  const scratch = scratchPaths('kvts-bench-mem-');
  const lv = await LibvirtDriver.connect({
    uri: 'test:///default',
    converterContext: { paths: scratch.paths },
  });
  const N = 200;
  try {
    await lv.sync(minimalVmi({ namespace: NS, name: 'kvts-bench-warm' }), { useEmulation: true });
    const libvirt = await heapPerDomain(N, async (i) => {
      await lv.sync(minimalVmi({ namespace: NS, name: `kvts-bench-mem-${i}` }), { useEmulation: true });
    });
    return { fake, libvirt };
  } finally {
    await lv.delete({ namespace: NS, name: 'kvts-bench-warm' });
    for (let i = 0; i < N; i++) await lv.delete({ namespace: NS, name: `kvts-bench-mem-${i}` });
    await lv.close();
    rmSync(scratch.dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  if (!guest.available()) throw new Error(guest.unavailableReason);
  const mem = await memoryFigures();
  console.log(
    `driver heap per managed domain: fake ${(mem.fake / 1024).toFixed(2)} KiB, libvirt ${(mem.libvirt / 1024).toFixed(2)} KiB`,
  );
  const { driverMs, virshMs } = await bootFigures();
  const boot = median(driverMs);
  const virsh = median(virshMs);
  console.log(
    `boot to marker (median of ${ROUNDS}): driver ${boot.toFixed(0)} ms, virsh create ${virsh.toFixed(0)} ms (${(((boot - virsh) / virsh) * 100).toFixed(1)}%)`,
  );
  console.log(`BENCH drivers boot_ms=${Math.round(boot)} virsh_boot_ms=${Math.round(virsh)}`);
}

await main();
