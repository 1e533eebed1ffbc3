/**
 * Test support: proves domain XML with libvirt itself. `virt-xml-validate` checks it
 * against libvirt's RelaxNG schema; `virsh -c test:///default` defines (and undefines)
 * it, which runs libvirt's own parser and post-parse checks without QEMU.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

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

/** Validates each XML document against the schema and defines/undefines it on test:///default. */
export function checkWithLibvirt(
  docs: { name: string; xml: string; domainName: string }[],
): Map<string, LibvirtVerdict> {
  const dir = mkdtempSync(path.join(tmpdir(), 'kvts-conv-'));
  const verdicts = new Map<string, LibvirtVerdict>();
  try {
    for (const [i, d] of docs.entries()) {
      const file = path.join(dir, `${i}.xml`);
      writeFileSync(file, d.xml);
      const v = spawnSync('virt-xml-validate', [file, 'domain'], { encoding: 'utf8' });
      // One virsh process per document: the test driver's state lives only for the connection.
      const r = spawnSync(
        'virsh',
        ['-q', '-c', 'test:///default', `define ${file}; undefine ${d.domainName}`],
        {
          encoding: 'utf8',
        },
      );
      verdicts.set(d.name, {
        valid: v.status === 0,
        defined: r.status === 0 && !/error/i.test(r.stderr),
        output: `${v.stdout}${v.stderr}${r.stdout}${r.stderr}`.trim(),
      });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return verdicts;
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
    for (const [i, d] of docs.entries()) {
      const name = `kvts-convtest-${process.pid}-${i}`;
      const uuid = /<uuid>([^<]+)<\/uuid>/.exec(d.xml)?.[1];
      let xml = d.xml.replace(/<name>[^<]*<\/name>/, `<name>${name}</name>`);
      if (uuid) xml = xml.replaceAll(uuid, randomUUID());
      const file = path.join(dir, `${i}.xml`);
      writeFileSync(file, xml);
      const r = spawnSync('virsh', ['-q', '-c', 'qemu:///system', 'define', file], { encoding: 'utf8' });
      if (r.status !== 0) failures.set(d.name, `${r.stdout}${r.stderr}`.trim());
      else
        spawnSync('virsh', ['-q', '-c', 'qemu:///system', 'undefine', '--nvram', name], { stdio: 'ignore' });
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return failures;
}
