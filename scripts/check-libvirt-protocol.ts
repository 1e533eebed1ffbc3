/**
 * Checks the hand-written numbers of the libvirt client against libvirt's own definitions.
 * libvirt's files are LGPL and are not vendored here; point this script at them:
 *
 *   npx tsx scripts/check-libvirt-protocol.ts --source /path/to/libvirt      # .x procedure enums
 *   npx tsx scripts/check-libvirt-protocol.ts --api-xml /usr/share/libvirt/api/libvirt-api.xml
 *
 * (`libvirt-api.xml` ships in Debian's libvirt-dev.) It exits non-zero and lists every
 * procedure or public constant whose number differs or is missing.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  AffectFlags,
  CreateFlags,
  DestroyFlags,
  DomainXMLFlags,
  ListDomainsFlags,
  MigrateFlags,
  UndefineFlags,
  VIR_CONNECT_RO,
} from '../src/drivers/libvirt/client';
import { ConsoleFlags } from '../src/drivers/libvirt/console';
import * as errors from '../src/drivers/libvirt/errors';
import { QemuProc, RemoteProc } from '../src/drivers/libvirt/protocol/constants';
import { DomainEventId, DomainState, LifecycleEvent } from '../src/drivers/libvirt/protocol/remote';
import { TypedParamType } from '../src/drivers/libvirt/protocol/types';

/** Parses `PREFIX_NAME = number` enum members out of rpcgen source text. */
export function parseProcedures(text: string, prefix: string): Map<string, number> {
  const out = new Map<string, number>();
  const re = new RegExp(`^\\s*${prefix}([A-Z0-9_]+)\\s*=\\s*(\\d+)`, 'gm');
  for (const m of text.matchAll(re)) out.set(m[1], Number(m[2]));
  return out;
}

/** Differences between our table and the parsed enum, one line each. */
export function compareProcedures(
  ours: Record<string, number>,
  theirs: Map<string, number>,
  prefix: string,
): string[] {
  const problems: string[] = [];
  for (const [name, num] of Object.entries(ours)) {
    const want = theirs.get(name);
    if (want === undefined) problems.push(`${prefix}${name}: not in libvirt's enum`);
    else if (want !== num) problems.push(`${prefix}${name}: ours ${num}, libvirt ${want}`);
  }
  return problems;
}

/** Parses `<enum name='X' ... value='N'>` entries of libvirt's API description. */
export function parseApiEnums(xml: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of xml.matchAll(/<enum name='([A-Z0-9_]+)'[^>]*? value='(-?\d+)'/g))
    out.set(m[1], Number(m[2]));
  return out;
}

/** Our public constants under libvirt's names. */
export function ourPublicConstants(): Record<string, number> {
  const out: Record<string, number> = {};
  const add = (prefix: string, table: Record<string, number>) => {
    for (const [k, v] of Object.entries(table)) out[`${prefix}${k}`] = v;
  };
  for (const [k, v] of Object.entries(errors)) if (typeof v === 'number') out[k] = v;
  add('VIR_DOMAIN_XML_', DomainXMLFlags);
  add('VIR_CONNECT_LIST_DOMAINS_', ListDomainsFlags);
  add('VIR_DOMAIN_UNDEFINE_', UndefineFlags);
  add('VIR_DOMAIN_', CreateFlags);
  add('VIR_DOMAIN_DESTROY_', DestroyFlags);
  add('VIR_DOMAIN_AFFECT_', AffectFlags);
  add('VIR_MIGRATE_', MigrateFlags);
  add('VIR_DOMAIN_CONSOLE_', ConsoleFlags);
  add('VIR_DOMAIN_EVENT_ID_', DomainEventId);
  add('VIR_DOMAIN_EVENT_', LifecycleEvent);
  add('VIR_DOMAIN_', DomainState);
  add('VIR_TYPED_PARAM_', TypedParamType);
  out.VIR_CONNECT_RO = VIR_CONNECT_RO;
  return out;
}

/** Differences between our constants and libvirt's API enums. */
export function compareConstants(ours: Record<string, number>, theirs: Map<string, number>): string[] {
  const problems: string[] = [];
  for (const [name, num] of Object.entries(ours)) {
    const want = theirs.get(name);
    if (want === undefined) problems.push(`${name}: not in libvirt's API`);
    else if (want !== num) problems.push(`${name}: ours ${num}, libvirt ${want}`);
  }
  return problems;
}

function checkApiXml(file: string): number {
  if (!existsSync(file)) {
    console.error(`${file}: not found (install libvirt-dev, or pass its libvirt-api.xml)`);
    return 2;
  }
  const ours = ourPublicConstants();
  const problems = compareConstants(ours, parseApiEnums(readFileSync(file, 'utf8')));
  for (const p of problems) console.error(p);
  const n = Object.keys(ours).length;
  console.log(
    problems.length === 0 ? `all ${n} public constants match libvirt` : `${problems.length} mismatches`,
  );
  return problems.length === 0 ? 0 : 1;
}

function checkSource(root: string): number {
  const files = {
    remote: path.join(root, 'src/remote/remote_protocol.x'),
    qemu: path.join(root, 'src/remote/qemu_protocol.x'),
  };
  for (const f of Object.values(files)) {
    if (!existsSync(f)) {
      console.error(`${f}: not found (pass the root of a libvirt source tree)`);
      return 2;
    }
  }
  const problems = [
    ...compareProcedures(
      RemoteProc,
      parseProcedures(readFileSync(files.remote, 'utf8'), 'REMOTE_PROC_'),
      'REMOTE_PROC_',
    ),
    ...compareProcedures(
      QemuProc,
      parseProcedures(readFileSync(files.qemu, 'utf8'), 'QEMU_PROC_'),
      'QEMU_PROC_',
    ),
  ];
  for (const p of problems) console.error(p);
  const n = Object.keys(RemoteProc).length + Object.keys(QemuProc).length;
  console.log(
    problems.length === 0 ? `all ${n} procedure numbers match libvirt` : `${problems.length} mismatches`,
  );
  return problems.length === 0 ? 0 : 1;
}

if (process.argv[1] && import.meta.url === `file://${path.resolve(process.argv[1])}`) {
  const [flag, arg] = process.argv.slice(2);
  if (flag === '--source' && arg) process.exit(checkSource(arg));
  else if (flag === '--api-xml' && arg) process.exit(checkApiXml(arg));
  console.error(
    'usage: npx tsx scripts/check-libvirt-protocol.ts --source <libvirt source root> | --api-xml <libvirt-api.xml>',
  );
  process.exit(2);
}
