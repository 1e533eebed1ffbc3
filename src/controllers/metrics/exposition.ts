/**
 * A small parser of the Prometheus text exposition format: families with their TYPE,
 * samples with their labels. The web console reads virt-handler's per-VMI figures with it
 * (local mode has no Prometheus), and the tests check scrapes against the catalog with it.
 */

/** One sample line. */
export interface ParsedSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** A whole scrape. */
export interface ParsedScrape {
  /** Family name -> type from the `# TYPE` lines. */
  types: Map<string, string>;
  samples: ParsedSample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

/** A label value as written (`\\`, `\"`, `\n` escaped) back to its text. */
const unescapeLabel = (v: string) => v.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));

/** Parses a scrape; throws on a line that is no sample, comment or blank, and on a family declared twice. */
export function parseExposition(text: string): ParsedScrape {
  const types = new Map<string, string>();
  const samples: ParsedSample[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('# TYPE ')) {
      const [, , name = '', type = ''] = line.split(' ');
      if (types.has(name)) throw new Error(`family ${name} declared twice`);
      types.set(name, type);
      continue;
    }
    if (!line || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`unparsable line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1] as string] = unescapeLabel(l[2] as string);
    samples.push({ name: m[1] as string, labels, value: Number(m[3]) });
  }
  return { types, samples };
}

/** The family a sample belongs to (histogram `_bucket`/`_sum`/`_count` series map to their family). */
export function familyOf(sample: string, types: Map<string, string>): string | undefined {
  if (types.has(sample)) return sample;
  const base = sample.replace(/_(bucket|sum|count)$/, '');
  return types.get(base) === 'histogram' ? base : undefined;
}
