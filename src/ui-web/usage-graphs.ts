/**
 * The VM page's graphs: CPU, memory, network and disk I/O over the last minutes, from the
 * server's `/api/vms/NS/NAME/usage` (virt-handler's metrics or a Prometheus), polled while
 * the page is open. Plain SVG polylines: no chart library in the bundle.
 */

import type { UsagePoint, UsageSeries } from '../cli/ui/vm-usage';
import { ApiFailure, call } from './api';
import { h, mount } from './dom';

type Figure = Exclude<keyof UsagePoint, 't'>;

interface Graph {
  id: string;
  title: string;
  lines: Array<{ figure: Figure; label: string }>;
  format: (v: number) => string;
}

const KiB = 1024;
const MiB = 1024 * 1024;
const rateText = (v: number) =>
  v >= MiB ? `${(v / MiB).toFixed(1)} MiB/s` : `${(v / KiB).toFixed(1)} KiB/s`;

const GRAPHS: Graph[] = [
  {
    id: 'cpu',
    title: 'CPU',
    lines: [{ figure: 'cpuCores', label: 'cores' }],
    format: (v) => `${v.toFixed(3)} cores`,
  },
  {
    id: 'memory',
    title: 'Memory',
    lines: [{ figure: 'memoryBytes', label: 'in use' }],
    format: (v) => `${(v / MiB).toFixed(1)} MiB`,
  },
  {
    id: 'network',
    title: 'Network',
    lines: [
      { figure: 'rxBytesPerSecond', label: 'received' },
      { figure: 'txBytesPerSecond', label: 'sent' },
    ],
    format: rateText,
  },
  {
    id: 'disk',
    title: 'Disk I/O',
    lines: [
      { figure: 'readBytesPerSecond', label: 'read' },
      { figure: 'writeBytesPerSecond', label: 'written' },
    ],
    format: rateText,
  },
];

/** The longest history the server keeps (vm-usage.ts's USAGE_WINDOW_MS). */
const WINDOW_MS = 10 * 60_000;
const W = 320;
const H = 90;
const SVG = 'http://www.w3.org/2000/svg';

function svg(tag: string, attrs: Record<string, string | number>): SVGElement {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  return el;
}

/** One graph of the series: its lines scaled to the window and to the largest value. */
function graphOf(g: Graph, s: UsageSeries, windowMs: number, now: number): Node {
  const values = g.lines.flatMap((l) =>
    s.points.map((p) => p[l.figure]).filter((v): v is number => v !== undefined),
  );
  const max = Math.max(...values, 0) || 1;
  const chart = svg('svg', { viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: 'img', class: 'graph' });
  chart.append(svg('rect', { x: 0, y: 0, width: W, height: H, class: 'graph-bg' }));
  const legend: Node[] = [];
  g.lines.forEach((l, i) => {
    const pts = s.points.filter((p) => p[l.figure] !== undefined);
    const xy = pts.map((p) => {
      const x = W - ((now - p.t) / windowMs) * W;
      const y = H - 2 - ((p[l.figure] as number) / max) * (H - 4);
      return `${Math.max(0, x).toFixed(1)},${y.toFixed(1)}`;
    });
    if (xy.length)
      chart.append(svg('polyline', { points: xy.join(' '), class: `graph-line graph-line-${i}` }));
    const latest = pts.at(-1)?.[l.figure];
    legend.push(
      h(
        'span',
        { class: `graph-legend graph-line-${i}`, 'data-figure': l.figure, 'data-latest': latest ?? '' },
        `${l.label}: ${latest === undefined ? 'no data' : g.format(latest)}`,
      ),
    );
  });
  const title =
    g.id === 'memory' ? `${g.title} (${s.memory === 'guest' ? 'guest' : 'QEMU resident'})` : g.title;
  const peak = values.length ? g.format(Math.max(...values)) : 'no data';
  chart.setAttribute('aria-label', `${title}, peak ${peak}`);
  const label = svg('text', { x: 4, y: 12, class: 'graph-peak' });
  label.textContent = `peak ${peak}`;
  chart.append(label);
  return h(
    'figure',
    { class: 'usage-graph', 'data-graph': g.id, 'data-points': s.points.length },
    h('figcaption', {}, title, ' ', ...legend),
    chart,
  );
}

/**
 * Fills `root` with the VM's graphs and refreshes them every `everyMs` while the page is
 * open; returns a function that stops the polling.
 */
export function showUsageGraphs(root: HTMLElement, ns: string, name: string, everyMs = 5_000): () => void {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const heading = h('h3', {}, 'Usage');
  const poll = async () => {
    try {
      const s = await call<UsageSeries>('GET', `/api/vms/${ns}/${name}/usage`);
      if (stopped) return;
      const now = Date.now();
      // The whole window once there is that much history; until then what there is (at
      // least a minute), so a page opened a moment ago does not draw a sliver.
      const first = s.points[0]?.t ?? now;
      const windowMs = Math.min(WINDOW_MS, Math.max(60_000, now - first));
      mount(
        root,
        heading,
        h('p', { class: 'usage-source' }, `From ${s.source}, the last ${Math.round(windowMs / 60_000)} min.`),
        h(
          'div',
          { class: 'usage-graphs' },
          GRAPHS.map((g) => graphOf(g, s, windowMs, now)),
        ),
      );
    } catch (e) {
      if (stopped) return;
      const text = e instanceof ApiFailure ? e.message : `usage: ${(e as Error).message}`;
      mount(root, heading, h('p', { class: 'usage-source' }, text));
      // No source configured (or no such VM): asking again would only repeat it.
      if (e instanceof ApiFailure && e.code === 404) return;
    }
    if (!stopped) timer = setTimeout(() => void poll(), everyMs);
  };
  void poll();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
