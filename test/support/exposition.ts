/**
 * A small parser of the Prometheus text exposition format, enough to check a scrape
 * against the metrics catalog: families with their TYPE, samples with their labels.
 */

export interface ParsedSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface ParsedScrape {
  /** Family name -> type from the `# TYPE` lines. */
  types: Map<string, string>;
  samples: ParsedSample[];
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parseExposition(text: string): ParsedScrape {
  const types = new Map<string, string>();
  const samples: ParsedSample[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('# TYPE ')) {
      const [, , name, type] = line.split(' ');
      if (types.has(name)) throw new Error(`family ${name} declared twice`);
      types.set(name, type);
      continue;
    }
    if (!line || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`unparsable line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(LABEL)) labels[l[1]] = l[2];
    samples.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return { types, samples };
}

/** The family a sample belongs to (histogram `_bucket`/`_sum`/`_count` series map to their family). */
export function familyOf(sample: string, types: Map<string, string>): string | undefined {
  if (types.has(sample)) return sample;
  const base = sample.replace(/_(bucket|sum|count)$/, '');
  return types.get(base) === 'histogram' ? base : undefined;
}
