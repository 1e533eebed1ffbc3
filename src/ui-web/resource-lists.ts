/**
 * The other kinds of a namespace, where the cluster or local mode serves them: VMIs,
 * migrations, DataVolumes (with import progress) and VM snapshots. Re-read every few
 * seconds while open; a kind that is not served here says so in its section.
 */
import { ApiFailure, call, type Obj } from './api';
import { age, h, mount } from './dom';
import { dataVolumeCell } from './vm-disks';

type Column = [title: string, cell: (o: Obj) => Node | string];

const name: Column = ['Name', (o) => o.metadata?.name ?? ''];
const created: Column = ['Age', (o) => age(o.metadata?.creationTimestamp)];
const phase: Column = ['Phase', (o) => String(o.status?.phase ?? '')];

const KINDS: Array<{ kind: string; title: string; columns: Column[] }> = [
  {
    kind: 'vmis',
    title: 'Virtual machine instances',
    columns: [
      name,
      phase,
      ['Node', (o) => String(o.status?.nodeName ?? '')],
      [
        'IP',
        (o) =>
          ((o.status?.interfaces ?? []) as Array<{ ipAddress?: string }>)
            .map((i) => i.ipAddress)
            .filter(Boolean)
            .join(', '),
      ],
      created,
    ],
  },
  {
    kind: 'migrations',
    title: 'Migrations',
    columns: [
      name,
      ['VMI', (o) => String(o.spec?.vmiName ?? '')],
      phase,
      [
        'From → to',
        (o) => {
          const m = o.status?.migrationState ?? {};
          return m.sourceNode || m.targetNode ? `${m.sourceNode ?? '?'} → ${m.targetNode ?? '?'}` : '';
        },
      ],
      created,
    ],
  },
  {
    kind: 'datavolumes',
    title: 'DataVolumes',
    columns: [name, ['Status', (o) => dataVolumeCell(o)], created],
  },
  {
    kind: 'snapshots',
    title: 'VM snapshots',
    columns: [
      name,
      ['Source', (o) => String(o.spec?.source?.name ?? '')],
      phase,
      ['Ready', (o) => (o.status?.readyToUse ? 'yes' : 'no')],
      created,
    ],
  },
];

function table(kind: string, columns: Column[], items: Obj[]): Node {
  if (items.length === 0) return h('p', { 'data-list': kind }, 'None.');
  return h(
    'table',
    { 'data-list': kind },
    h(
      'tr',
      {},
      columns.map(([t]) => h('th', {}, t)),
    ),
    items.map((o) =>
      h(
        'tr',
        { 'data-name': o.metadata?.name ?? '' },
        columns.map(([, cell]) => h('td', {}, cell(o))),
      ),
    ),
  );
}

/** Shows the lists of `namespace` (all when empty) in `root`; returns a function that stops refreshing them. */
export function showResourceLists(root: HTMLElement, namespace: string, everyMs = 3_000): () => void {
  const sections = KINDS.map((k) => ({ ...k, body: h('div', {}) }));
  mount(
    root,
    h('p', {}, h('a', { href: '#/' }, '← All virtual machines')),
    h('h2', {}, namespace ? `In namespace ${namespace}` : 'In all namespaces'),
    ...sections.map((s) => h('section', {}, h('h3', {}, s.title), s.body)),
  );
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const refresh = async () => {
    await Promise.all(
      sections.map(async (s) => {
        try {
          const r = await call<{ items: Obj[] }>(
            'GET',
            `/api/list/${s.kind}?namespace=${encodeURIComponent(namespace)}`,
          );
          if (!stopped) mount(s.body, table(s.kind, s.columns, r.items));
        } catch (e) {
          const text = e instanceof ApiFailure && e.code === 404 ? 'Not served here.' : (e as Error).message;
          if (!stopped) mount(s.body, h('p', { class: 'usage-source', 'data-list': s.kind }, text));
        }
      }),
    );
    if (!stopped) timer = setTimeout(() => void refresh(), everyMs);
  };
  void refresh();
  return () => {
    stopped = true;
    if (timer) clearTimeout(timer);
  };
}
