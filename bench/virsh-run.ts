/**
 * bench:cluster's third way: the domain local mode defined, started by a raw `virsh
 * create` on the system libvirtd, from the create to the boot marker.
 */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SerialConsole } from '../test/support/guest';

/**
 * `xml` (a launcher's domain) for a raw daemon: named `name`, no UUID, its disk the
 * qcow2 `overlay`, every socket, log and other path in `dir`; with its serial console's socket.
 */
export function domainInDir(
  xml: string,
  name: string,
  dir: string,
  overlay: string,
): { xml: string; serial: string } {
  let x = xml.replace(/<name>[^<]*<\/name>/, `<name>${name}</name>`).replace(/<uuid>[^<]*<\/uuid>/, '');
  x = x
    .replace(/<entry name='uuid'>[^<]*<\/entry>/, '')
    .replace(/<backingStore[\s\S]*?<\/backingStore>/g, '');
  x = x.replace(/<source file='[^']+'/g, `<source file='${overlay}'`);
  let n = 0;
  x = x.replace(/path='([^']+)'/g, (_m, p: string) =>
    p.startsWith('/dev') ? `path='${p}'` : `path='${dir}/s${n++}'`,
  );
  x = x.replace(/socket='([^']+)'/g, () => `socket='${dir}/s${n++}'`);
  x = x.replace(/<log file='[^']+'/g, `<log file='${dir}/serial.log'`);
  // libvirt's own dump puts <source> first; a launcher's rendered XML may not.
  const serial = /<serial type='unix'>(?:(?!<\/serial>)[\s\S])*?<source mode='bind' path='([^']+)'/.exec(
    x,
  )?.[1];
  if (!serial) throw new Error('no unix serial console in the domain XML');
  return { xml: x, serial };
}

/** The same domain by `virsh create` on the system libvirtd: renamed, a fresh overlay of the disk. */
export async function virshRun(xml: string, disk: string, markerLine: RegExp): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'kvts-bench-cluster-virsh-'));
  chmodSync(dir, 0o777);
  const name = `kvts-bench-cluster-${process.pid}`;
  const overlay = join(dir, 'disk.qcow2');
  execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', '-F', 'qcow2', '-b', disk, overlay]);
  chmodSync(overlay, 0o666);
  const { xml: x, serial } = domainInDir(xml, name, dir, overlay);
  const file = join(dir, 'domain.xml');
  writeFileSync(file, x);
  try {
    const t0 = performance.now();
    const virsh = spawn('virsh', ['-c', 'qemu:///system', 'create', file], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    virsh.stderr.on('data', (d) => {
      err += d;
    });
    const code = await new Promise<number | null>((r) => virsh.once('exit', r));
    if (code !== 0) {
      writeFileSync(join(tmpdir(), 'kvts-bench-cluster-virsh.xml'), x);
      throw new Error(`virsh create (domain in ${join(tmpdir(), 'kvts-bench-cluster-virsh.xml')}): ${err}`);
    }
    const con = await SerialConsole.connect(serial, 60_000);
    try {
      await con.waitFor(markerLine, 300_000);
      return Math.round(performance.now() - t0);
    } finally {
      con.close();
    }
  } finally {
    try {
      execFileSync('virsh', ['-c', 'qemu:///system', 'destroy', name], { stdio: 'ignore' });
    } catch {
      // never started
    }
    rmSync(dir, { recursive: true, force: true });
  }
}
