/**
 * bench:migration's reference: the same domain (the XML a kubevirt-ts launcher ran) migrated
 * by a bare `virsh migrate --live --p2p --copy-storage-inc` from the system libvirtd to a
 * second libvirtd on this host (test/support/second-libvirtd.ts: its own mount and UTS
 * namespace and host UUID, the host's network), QEMU's and the disk's streams over
 * loopback TCP, no proxy, no TLS. The cluster's two nodes are namespaces of this same
 * host, and their launchers' session daemons are gone once a migration ends, so this
 * pair of daemons is the closest reachable equivalent.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SerialConsole } from '../test/support/guest';
import { startSecondLibvirtd } from '../test/support/second-libvirtd';
import { domainInDir } from './virsh-run';

/** What one migration cost, from the destination's completed job statistics. */
export interface JobFigures {
  /** Wall time of the whole operation as the caller saw it. */
  totalMs: number;
  /** libvirt's `downtime` (ms the guest was paused). */
  downtimeMs: number;
  /** libvirt's `time_elapsed` (the migration job). */
  jobMs: number;
  /** MiB libvirt processed (memory and disks). */
  mib: number;
}

/**
 * Reads `virsh domjobinfo --completed --rawstats` output: `downtime`, `time_elapsed` and
 * `data_processed` (or, without raw lines, the human ones).
 */
export function parseCompletedJob(text: string): Omit<JobFigures, 'totalMs'> {
  const raw = (k: string) => {
    const m = new RegExp(`^\\s*${k}\\s*[:=]\\s*([0-9.]+)\\s*$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };
  const human = (label: string) => {
    const m = new RegExp(`^${label}:\\s+([0-9.]+)\\s*(\\w+)`, 'm').exec(text);
    if (!m) return undefined;
    const unit = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, ms: 1 }[m[2]] ?? 1;
    return Number(m[1]) * unit;
  };
  const downtime = raw('downtime') ?? human('Total downtime');
  const elapsed = raw('time_elapsed') ?? human('Time elapsed');
  const data = raw('data_processed') ?? human('Data processed');
  if (downtime === undefined || elapsed === undefined || data === undefined) {
    throw new Error(`no completed migration job statistics in:\n${text}`);
  }
  return { downtimeMs: downtime, jobMs: elapsed, mib: data / 1024 ** 2 };
}

/**
 * Boots `xml` (a fresh overlay of `disk`) on the system libvirtd, waits for `marker` on
 * its serial console, then migrates it live to a second daemon; the figures of that
 * migration.
 */
export async function bareVirshMigration(xml: string, disk: string, marker: RegExp): Promise<JobFigures> {
  const daemon = await startSecondLibvirtd();
  const src = mkdtempSync('/tmp/kvts-bm-s-');
  const dst = mkdtempSync('/tmp/kvts-bm-d-');
  const name = `kvts-bench-mig-${process.pid}`;
  try {
    const files = [src, dst].map((dir) => {
      chmodSync(dir, 0o777);
      const overlay = join(dir, 'disk.qcow2');
      execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b', disk, overlay]);
      chmodSync(overlay, 0o666);
      const d = domainInDir(xml, name, dir, overlay);
      writeFileSync(join(dir, 'domain.xml'), d.xml);
      return { file: join(dir, 'domain.xml'), serial: d.serial, xml: d.xml };
    });
    execFileSync('virsh', ['-c', 'qemu:///system', 'create', files[0].file], { stdio: 'pipe' });
    // The target's XML must name the same guest: the UUID libvirt gave it.
    const uuid = execFileSync('virsh', ['-c', 'qemu:///system', 'domuuid', name], {
      encoding: 'utf8',
    }).trim();
    writeFileSync(
      files[1].file,
      files[1].xml.replace(`<name>${name}</name>`, `<name>${name}</name><uuid>${uuid}</uuid>`),
    );
    const con = await SerialConsole.connect(files[0].serial, 60_000);
    try {
      await con.waitFor(marker, 300_000);
    } finally {
      con.close();
    }
    const t0 = performance.now();
    const r = spawnSync(
      'virsh',
      [
        '-c',
        'qemu:///system',
        'migrate',
        '--live',
        '--p2p',
        '--copy-storage-inc',
        '--migrate-disks',
        'vda',
        '--xml',
        files[1].file,
        '--migrateuri',
        'tcp://127.0.0.1:49390',
        '--disks-uri',
        'tcp://127.0.0.1:49391',
        name,
        daemon.uri,
      ],
      { encoding: 'utf8', timeout: 300_000 },
    );
    const totalMs = Math.round(performance.now() - t0);
    if (r.status !== 0) throw new Error(`virsh migrate: ${r.stderr}\n${daemon.log().slice(-3000)}`);
    const info = execFileSync('virsh', ['-c', daemon.uri, 'domjobinfo', name, '--completed', '--rawstats'], {
      encoding: 'utf8',
    });
    return { totalMs, ...parseCompletedJob(info) };
  } finally {
    spawnSync('virsh', ['-c', 'qemu:///system', 'destroy', name], { stdio: 'ignore' });
    await daemon.stop();
    for (const d of [src, dst]) rmSync(d, { recursive: true, force: true });
  }
}
