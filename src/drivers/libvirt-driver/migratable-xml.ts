/**
 * The domain XML a migration sends, as upstream's launcher builds it (migratableDomXML):
 * the source's live definition with VIR_DOMAIN_XML_MIGRATABLE (so the guest ABI, the
 * expanded CPU model and device addresses stay exactly as the running guest has them),
 * with the host paths swapped for the target pod's. The target's paths come from the
 * domain the target driver rendered for its own pod (`prepareTarget`): files and sockets
 * at the same place in both documents (kernel, initrd, loader, NVRAM, disk sources,
 * serial/console/channel sockets and logs, graphics sockets) are paired up, and each source path
 * is replaced by its target counterpart wherever it appears in the live XML.
 */
import { XMLParser } from 'fast-xml-parser';

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: '@_',
  isArray: (name) => ['disk', 'serial', 'console', 'channel', 'graphics', 'listen'].includes(name),
});

type Node = Record<string, unknown>;
const text = (v: unknown): string | undefined =>
  typeof v === 'string'
    ? v
    : typeof (v as Node)?.['#text'] === 'string'
      ? ((v as Node)['#text'] as string)
      : undefined;
const attr = (v: unknown, name: string): string | undefined => {
  const a = (v as Node | undefined)?.[`@_${name}`];
  return typeof a === 'string' ? a : undefined;
};
const list = (v: unknown): Node[] => (Array.isArray(v) ? (v as Node[]) : []);

/** Every host path of a domain document, keyed by where it sits. */
export function domainPaths(xml: string): Map<string, string> {
  const out = new Map<string, string>();
  const domain = parser.parse(xml)?.domain as Node | undefined;
  if (!domain) throw new Error('not a <domain> document');
  const put = (key: string, value: string | undefined) => {
    if (value?.startsWith('/')) out.set(key, value);
  };
  const os = domain.os as Node | undefined;
  for (const k of ['kernel', 'initrd', 'loader', 'nvram']) put(`os.${k}`, text(os?.[k]));
  const devices = (domain.devices ?? {}) as Node;
  list(devices.disk).forEach((d, i) => {
    const src = d.source as Node | undefined;
    put(`disk[${i}].file`, attr(src, 'file'));
    put(`disk[${i}].dev`, attr(src, 'dev'));
  });
  for (const kind of ['serial', 'console', 'channel']) {
    for (const [i, c] of list(devices[kind]).entries()) {
      put(`${kind}[${i}].path`, attr(c.source, 'path'));
      put(`${kind}[${i}].log`, attr(c.log, 'file'));
    }
  }
  list(devices.graphics).forEach((g, i) => {
    put(`graphics[${i}].socket`, attr(g, 'socket'));
    for (const [j, l] of list(g.listen).entries())
      put(`graphics[${i}].listen[${j}].socket`, attr(l, 'socket'));
  });
  return out;
}

function escapeXml(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/'/g, '&apos;')
    .replace(/"/g, '&quot;');
}

/**
 * `liveXml` (the source's migratable definition) with every path that differs from the
 * same place in `preparedXml` (the target's rendering) replaced by the target's.
 */
export function migratableXmlForTarget(liveXml: string, preparedXml: string): string {
  const from = domainPaths(liveXml);
  const to = domainPaths(preparedXml);
  const pairs = new Map<string, string>();
  for (const [key, path] of from) {
    const target = to.get(key);
    if (target && target !== path) pairs.set(path, target);
  }
  let out = liveXml;
  // Longest first, so /a/b/c is replaced before its prefix /a/b could be.
  for (const [oldPath, newPath] of [...pairs].sort((a, b) => b[0].length - a[0].length)) {
    const o = escapeXml(oldPath);
    const n = escapeXml(newPath);
    for (const [l, r] of [
      ["'", "'"],
      ['"', '"'],
      ['>', '<'],
    ]) {
      out = out.split(`${l}${o}${r}`).join(`${l}${n}${r}`);
    }
  }
  return out;
}
