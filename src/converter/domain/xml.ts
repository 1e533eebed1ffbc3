/**
 * Encodes the domain model to libvirt XML and decodes it back (with fast-xml-parser),
 * driven by the shape table in `schema.ts`. The encoder escapes `< > & ' "` in text and
 * attributes, and refuses characters XML 1.0 cannot carry (control characters) and line
 * breaks or tabs inside attributes (a parser would fold them into spaces), so every
 * string either round-trips exactly or fails loudly with the path of the offending value.
 * Decoding ignores elements and attributes the model does not know (libvirt adds many to
 * a live domain's XML), like Go's encoding/xml does for upstream.
 */
import { XMLParser } from 'fast-xml-parser';
import { domainSpec, type ElementSpec, type Leaf } from './schema';
import type { Domain } from './types';

/** A value that cannot be written to or read from domain XML, with its model path. */
export class DomainXMLError extends Error {
  constructor(
    readonly path: string,
    message: string,
  ) {
    super(`${path}: ${message}`);
    this.name = 'DomainXMLError';
  }
}

const ATTR = '@_';
const TEXT = '#text';

/**
 * True when `value` holds a character outside XML 1.0's Char production: C0 controls
 * other than tab/LF/CR, U+FFFE/U+FFFF, or an unpaired surrogate.
 */
function hasInvalidXmlChar(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20) {
      if (c !== 0x09 && c !== 0x0a && c !== 0x0d) return true;
    } else if (c >= 0xd800 && c <= 0xdbff) {
      const next = value.charCodeAt(i + 1);
      if (!(next >= 0xdc00 && next <= 0xdfff)) return true;
      i++;
    } else if ((c >= 0xdc00 && c <= 0xdfff) || c === 0xfffe || c === 0xffff) {
      return true;
    }
  }
  return false;
}
const ATTR_BREAKS = /[\t\n\r]/;

function checkString(value: string, path: string, inAttribute: boolean): string {
  if (hasInvalidXmlChar(value)) {
    throw new DomainXMLError(path, 'contains a control character that XML cannot carry');
  }
  if (inAttribute ? ATTR_BREAKS.test(value) : value.includes('\r')) {
    throw new DomainXMLError(path, 'contains a line break or tab, which XML would not preserve here');
  }
  return value;
}

function scalarOut(value: unknown, kind: Leaf, path: string, inAttribute: boolean): string {
  if (kind === 'number') {
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      throw new DomainXMLError(path, `expected a finite number, got ${JSON.stringify(value)}`);
    }
    return String(value);
  }
  if (typeof value !== 'string') {
    throw new DomainXMLError(path, `expected a string, got ${typeof value}`);
  }
  return escapeXML(checkString(value, path, inAttribute));
}

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&apos;',
};
const NEEDS_ESCAPE = /[&<>"']/;
const ESCAPE_ALL = /[&<>"']/g;

/** Escapes the five XML special characters (the same set in text and attributes). */
function escapeXML(value: string): string {
  return NEEDS_ESCAPE.test(value) ? value.replace(ESCAPE_ALL, (ch) => ESCAPES[ch]) : value;
}

/**
 * Serializes one element. A direct, table-driven writer: fast-xml-parser's builder took
 * about 0.5 ms for a small domain, ten times the conversion itself.
 */
function writeElement(
  out: string[],
  tag: string,
  model: unknown,
  spec: ElementSpec | Leaf,
  path: string,
  indent: string,
): void {
  if (typeof spec === 'string') {
    const text = scalarOut(model, spec, path, false);
    out.push(text === '' ? `${indent}<${tag}/>\n` : `${indent}<${tag}>${text}</${tag}>\n`);
    return;
  }
  if (model === null || typeof model !== 'object' || Array.isArray(model)) {
    throw new DomainXMLError(
      path,
      `expected an object, got ${Array.isArray(model) ? 'an array' : typeof model}`,
    );
  }
  const m = model as Record<string, unknown>;
  let open = `${indent}<${tag}`;
  for (const [name, numeric] of spec.attrs) {
    const v = m[name];
    if (v === undefined) continue;
    open += ` ${name}="${scalarOut(v, numeric ? 'number' : 'string', `${path}.${name}`, true)}"`;
  }
  const text =
    spec.text !== undefined && m.value !== undefined
      ? scalarOut(m.value, spec.text, `${path}.value`, false)
      : '';
  // Reserve the opening tag's slot: whether it self-closes depends on the children.
  const slot = out.push('') - 1;
  const inner = `${indent}  `;
  for (const child of spec.children) {
    const v = m[child.tag];
    if (v === undefined) continue;
    const childPath = `${path}.${child.tag}`;
    if (child.many) {
      if (!Array.isArray(v)) throw new DomainXMLError(childPath, 'expected an array');
      for (let i = 0; i < v.length; i++)
        writeElement(out, child.tag, v[i], child.spec, `${childPath}[${i}]`, inner);
    } else {
      writeElement(out, child.tag, v, child.spec, childPath, inner);
    }
  }
  if (out.length > slot + 1) {
    out[slot] = `${open}>\n`;
    out.push(`${indent}</${tag}>\n`);
  } else {
    out[slot] = text === '' ? `${open}/>\n` : `${open}>${text}</${tag}>\n`;
  }
}

/** Encodes a domain to libvirt XML. Throws `DomainXMLError` naming the bad value's path. */
export function encodeDomain(domain: Domain): string {
  const out: string[] = [];
  writeElement(out, 'domain', domain, domainSpec, 'domain', '');
  return out.join('');
}

/**
 * Encodes one device of `<devices>` (a `disk` to hot-plug, say) to libvirt XML, as it
 * appears inside a domain. Throws `DomainXMLError` for an unknown device or a bad value.
 */
export function encodeDevice(tag: string, model: unknown): string {
  const devices = domainSpec.children.find((c) => c.tag === 'devices')?.spec;
  const spec = typeof devices === 'object' ? devices.children.find((c) => c.tag === tag)?.spec : undefined;
  if (!spec || typeof spec !== 'object') throw new DomainXMLError(`devices.${tag}`, 'not a device element');
  const out: string[] = [];
  writeElement(out, tag, model, spec, `devices.${tag}`, '');
  return out.join('');
}

const parser = new XMLParser({
  ignoreAttributes: false,
  attributeNamePrefix: ATTR,
  textNodeName: TEXT,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  processEntities: true,
  htmlEntities: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  removeNSPrefix: false,
});

function scalarIn(raw: unknown, kind: Leaf, path: string): string | number {
  // A text-only element with attributes we do not model parses as an object.
  const text =
    raw !== null && typeof raw === 'object' ? ((raw as Record<string, unknown>)[TEXT] ?? '') : (raw ?? '');
  const s = String(text);
  if (kind === 'string') return s;
  const n = Number(s.trim());
  if (s.trim() === '' || !Number.isFinite(n))
    throw new DomainXMLError(path, `expected a number, got ${JSON.stringify(s)}`);
  return n;
}

function decodeElement(raw: unknown, spec: ElementSpec, path: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (raw === null || typeof raw !== 'object') {
    // `<acpi/>` or `<name>x</name>` where an element with attributes was expected.
    if (spec.text !== undefined && raw !== '' && raw !== undefined)
      out.value = scalarIn(raw, spec.text, path);
    return out;
  }
  const obj = raw as Record<string, unknown>;
  for (const [name, numeric] of spec.attrs) {
    const v = obj[ATTR + name];
    if (v === undefined) continue;
    out[name] = scalarIn(v, numeric ? 'number' : 'string', `${path}.${name}`);
  }
  if (spec.text !== undefined && obj[TEXT] !== undefined) {
    out.value = scalarIn(obj[TEXT], spec.text, `${path}.value`);
  }
  for (const child of spec.children) {
    const v = obj[child.tag];
    if (v === undefined) continue;
    const childPath = `${path}.${child.tag}`;
    const one = (item: unknown, p: string) =>
      typeof child.spec === 'string' ? scalarIn(item, child.spec, p) : decodeElement(item, child.spec, p);
    if (child.many) {
      const items = Array.isArray(v) ? v : [v];
      out[child.tag] = items.map((item, i) => one(item, `${childPath}[${i}]`));
    } else {
      if (Array.isArray(v)) throw new DomainXMLError(childPath, 'appears more than once');
      out[child.tag] = one(v, childPath);
    }
  }
  return out;
}

/** Decodes libvirt domain XML into the model; unknown elements and attributes are ignored. */
export function decodeDomain(xml: string): Domain {
  const doc = parser.parse(xml) as Record<string, unknown>;
  if (doc.domain === undefined)
    throw new DomainXMLError('domain', 'the document has no <domain> root element');
  return decodeElement(doc.domain, domainSpec, 'domain') as unknown as Domain;
}
