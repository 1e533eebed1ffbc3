/**
 * Test support: proves domain XML with libvirt itself. `virt-xml-validate` checks it
 * against libvirt's RelaxNG schema; `virsh -c test:///default` defines (and undefines)
 * it, which runs libvirt's own parser and post-parse checks without QEMU.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

function has(cmd: string, args: string[]): boolean {
  return spawnSync(cmd, args, { stdio: 'ignore' }).status === 0;
}

/** Whether virt-xml-validate and virsh (with the test driver) are installed. */
export const libvirtToolsAvailable =
  has('sh', ['-c', 'command -v virt-xml-validate']) && has('virsh', ['-c', 'test:///default', 'version']);

/** Whether the installed domain schema knows SEV-SNP (libvirt >= 10.5); Debian 12 ships 9.0. */
export const schemaKnowsSNP =
  libvirtToolsAvailable && has('grep', ['-q', 'sev-snp', '/usr/share/libvirt/schemas/domaincommon.rng']);

/** Result of checking one document. */
export interface LibvirtVerdict {
  valid: boolean;
  defined: boolean;
  output: string;
}

const execFileAsync = promisify(execFile);

/** Runs `fn` over `items` with at most `limit` in flight. */
async function pool<T, R>(items: T[], limit: number, fn: (item: T, i: number) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i], i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** Runs one virsh process with `;`-separated commands; returns the domain names it then lists. */
function virshBatch(uri: string, commands: string[]): { names: Set<string>; stderr: string } {
  const r = spawnSync('virsh', ['-q', '-c', uri, [...commands, 'list --all --name'].join('; ')], {
    encoding: 'utf8',
  });
  return {
    names: new Set(
      r.stdout
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean),
    ),
    stderr: r.stderr,
  };
}

/** Gives a document a unique name and UUID (replacing the UUID everywhere, sysinfo included). */
function uniquify(xml: string, name: string): string {
  const uuid = /<uuid>([^<]+)<\/uuid>/.exec(xml)?.[1];
  const renamed = xml.replace(/<name>[^<]*<\/name>/, `<name>${name}</name>`);
  return uuid ? renamed.replaceAll(uuid, randomUUID()) : renamed;
}

/**
 * Validates each XML document with virt-xml-validate (in parallel) and defines them all
 * on test:///default in one virsh process (the test driver's state lives only for the
 * connection, so nothing needs undefining).
 */
export async function checkWithLibvirt(
  docs: { name: string; xml: string }[],
): Promise<Map<string, LibvirtVerdict>> {
  const dir = mkdtempSync(path.join(tmpdir(), 'kvts-conv-'));
  try {
    const files = docs.map((d, i) => {
      const file = path.join(dir, `${i}.xml`);
      writeFileSync(file, d.xml);
      return file;
    });
    // Several examples share a firmware UUID: define renamed copies so they cannot collide.
    const names = docs.map((_, i) => `kvts-check-${i}`);
    const copies = docs.map((d, i) => {
      const file = path.join(dir, `${i}.define.xml`);
      writeFileSync(file, uniquify(d.xml, names[i]));
      return file;
    });
    const validations = await pool(files, 8, async (file) => {
      try {
        await execFileAsync('virt-xml-validate', [file, 'domain']);
        return { valid: true, output: '' };
      } catch (e) {
        const err = e as { stdout?: string; stderr?: string };
        return { valid: false, output: `${err.stdout ?? ''}${err.stderr ?? ''}` };
      }
    });
    const defined = virshBatch(
      'test:///default',
      copies.map((f) => `define ${f}`),
    );
    return new Map(
      docs.map((d, i) => {
        const ok = defined.names.has(names[i]);
        return [
          d.name,
          {
            valid: validations[i].valid,
            defined: ok,
            output: `${validations[i].output}${ok ? '' : defined.stderr}`.trim(),
          },
        ];
      }),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs `virsh` on the test driver and returns stdout (throws on failure). */
export function virshTest(command: string): string {
  return execFileSync('virsh', ['-q', '-c', 'test:///default', command], { encoding: 'utf8' });
}

/** Whether the system libvirtd (QEMU driver) answers. */
export const qemuDriverAvailable = has('virsh', ['-c', 'qemu:///system', 'version']);

/** Whether this host's QEMU supports SEV guests (the QEMU driver refuses SEV domains otherwise). */
export const hostSupportsSEV =
  qemuDriverAvailable &&
  /<sev supported='yes'/.test(
    spawnSync('virsh', ['-c', 'qemu:///system', 'domcapabilities'], { encoding: 'utf8' }).stdout ?? '',
  );

/**
 * Defines each domain on the real QEMU driver (qemu:///system) and undefines it again:
 * libvirt's QEMU driver checks the XML against the installed QEMU (machine types, device
 * models, addresses), far beyond the schema. Names and UUIDs are made unique per run so
 * concurrent tests on the same daemon cannot collide. Returns the failures, by name.
 */
export function defineOnQemu(docs: { name: string; xml: string }[]): Map<string, string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'kvts-qemu-'));
  const failures = new Map<string, string>();
  try {
    const names = docs.map((_, i) => `kvts-convtest-${process.pid}-${i}`);
    const files = docs.map((d, i) => {
      const file = path.join(dir, `${i}.xml`);
      writeFileSync(file, uniquify(d.xml, names[i]));
      return file;
    });
    const defined = virshBatch(
      'qemu:///system',
      files.map((f) => `define ${f}`),
    );
    const ours = names.filter((n) => defined.names.has(n));
    if (ours.length)
      virshBatch(
        'qemu:///system',
        ours.map((n) => `undefine --nvram ${n}`),
      );
    docs.forEach((d, i) => {
      if (!defined.names.has(names[i])) failures.set(d.name, defined.stderr.trim());
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return failures;
}
