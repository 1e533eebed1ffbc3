/** A VM's page: status, spec summary, usage graphs, conditions, events, actions, serial console and VNC. */
import { ApiFailure, call, type Obj, watchObjects } from './api';
import { age, h, mount } from './dom';
import { showUsageGraphs } from './usage-graphs';
import { disksSection } from './vm-disks';
import { cpuOf, memoryOf } from './vm-list';

interface Details {
  vm: Obj;
  vmi?: Obj;
  events: Obj[];
  dataVolumes: Obj[];
}

const ACTIONS: Array<[string, string]> = [
  ['start', 'Start'],
  ['stop', 'Stop'],
  ['restart', 'Restart'],
  ['pause', 'Pause'],
  ['unpause', 'Unpause'],
  ['softreboot', 'Soft reboot'],
  ['migrate', 'Migrate'],
];

function conditionsTable(title: string, obj: Obj | undefined): Node {
  const conds = (obj?.status?.conditions ?? []) as Array<Record<string, string>>;
  return h(
    'section',
    {},
    h('h3', {}, title),
    conds.length === 0
      ? h('p', {}, 'None.')
      : h(
          'table',
          { class: 'conditions' },
          h(
            'tr',
            {},
            h('th', {}, 'Type'),
            h('th', {}, 'Status'),
            h('th', {}, 'Reason'),
            h('th', {}, 'Message'),
          ),
          conds.map((c) =>
            h(
              'tr',
              {},
              h('td', {}, c.type),
              h('td', {}, c.status),
              h('td', {}, c.reason ?? ''),
              h('td', {}, c.message ?? ''),
            ),
          ),
        ),
  );
}

function summary(d: Details): Node {
  const spec = d.vm.spec ?? {};
  const ref = (r?: { kind?: string; name?: string }) =>
    r?.name ? `${r.name}${r.kind ? ` (${r.kind})` : ''}` : '';
  const rows: Array<[string, string]> = [
    ['Status', d.vm.status?.printableStatus ?? ''],
    ['Run strategy', spec.runStrategy ?? (spec.running ? 'Always (running: true)' : 'Halted')],
    ['Phase', d.vmi?.status?.phase ?? 'no instance'],
    ['Node', d.vmi?.status?.nodeName ?? ''],
    [
      'IP',
      (d.vmi?.status?.interfaces ?? [])
        .map((i: { ipAddress?: string }) => i.ipAddress)
        .filter(Boolean)
        .join(', '),
    ],
    ['Instance type', ref(spec.instancetype)],
    ['Preference', ref(spec.preference)],
    ['CPU', cpuOf(d.vm)],
    ['Memory', memoryOf(d.vm)],
    ['Age', age(d.vm.metadata?.creationTimestamp)],
  ];
  return h(
    'dl',
    { class: 'summary' },
    rows.flatMap(([k, v]) => [
      h('dt', {}, k),
      h('dd', { 'data-field': k.toLowerCase().replace(/ /g, '-') }, v),
    ]),
  );
}

function eventsTable(events: Obj[]): Node {
  const sorted = [...events].sort((a, b) =>
    String(b.lastTimestamp ?? '').localeCompare(String(a.lastTimestamp ?? '')),
  );
  return h(
    'section',
    {},
    h('h3', {}, 'Events'),
    sorted.length === 0
      ? h('p', {}, 'None.')
      : h(
          'table',
          { class: 'events' },
          h('tr', {}, h('th', {}, 'Type'), h('th', {}, 'Reason'), h('th', {}, 'Age'), h('th', {}, 'Message')),
          sorted.map((e) =>
            h(
              'tr',
              {},
              h('td', {}, String(e.type ?? '')),
              h('td', {}, String(e.reason ?? '')),
              h('td', {}, age(String(e.lastTimestamp ?? e.metadata?.creationTimestamp ?? ''))),
              h('td', {}, String(e.message ?? '')),
            ),
          ),
        ),
  );
}

/** Asks in a modal dialog; resolves true when confirmed. */
function confirmDialog(text: string): Promise<boolean> {
  return new Promise((resolve) => {
    const dlg = h(
      'dialog',
      { class: 'confirm', 'aria-label': 'Confirm' },
      h('p', {}, text),
      h(
        'form',
        { method: 'dialog' },
        h('button', { value: 'cancel' }, 'Cancel'),
        ' ',
        h('button', { value: 'ok', class: 'danger' }, 'Delete'),
      ),
    );
    dlg.addEventListener('close', () => {
      resolve(dlg.returnValue === 'ok');
      dlg.remove();
    });
    document.body.append(dlg);
    dlg.showModal();
  });
}

/** Shows VM `ns/name` in `root`; returns a function that stops its watches and streams. */
export function showVmPage(root: HTMLElement, ns: string, name: string): () => void {
  const status = h('div', { class: 'status-line', role: 'status', 'aria-live': 'polite' });
  const errorBox = h('div', { class: 'error', role: 'alert' });
  const body = h('div', {});
  // Conditions and events below the graphs: they grow, the summary and graphs do not.
  const more = h('div', {});
  const panel = h('div', { class: 'panel' });
  const usage = h('section', { class: 'usage' });
  let closePanel: (() => void) | undefined;
  const act = async (action: string) => {
    errorBox.textContent = '';
    try {
      await call('PUT', `/api/vms/${ns}/${name}/${action}`);
      status.textContent = `${action}: requested`;
    } catch (e) {
      errorBox.textContent = (e as Error).message;
    }
  };
  const del = async () => {
    if (!(await confirmDialog(`Delete VirtualMachine ${ns}/${name}?`))) return;
    try {
      await call('DELETE', `/api/vms/${ns}/${name}`);
      location.hash = '#/';
    } catch (e) {
      errorBox.textContent = (e as Error).message;
    }
  };
  const open = async (which: 'console' | 'vnc' | 'screenshot' | 'yaml') => {
    closePanel?.();
    closePanel = undefined;
    mount(panel);
    if (which === 'yaml') {
      const d = await call<Details>('GET', `/api/vms/${ns}/${name}`);
      closePanel = (await import('./yaml-editor')).openYamlEditor(panel, d.vm, () => {
        status.textContent = 'saved';
        mount(panel);
        void refresh();
      });
    } else if (which === 'console')
      closePanel = (await import('./serial-console')).openConsole(panel, ns, name);
    else if (which === 'vnc') closePanel = (await import('./vnc-view')).openVnc(panel, ns, name);
    else {
      const res = await fetch(`/api/vms/${ns}/${name}/screenshot`);
      if (!res.ok) {
        const s = (await res.json().catch(() => ({}))) as { message?: string };
        errorBox.textContent = s.message ?? `HTTP ${res.status}`;
        return;
      }
      const url = URL.createObjectURL(await res.blob());
      mount(panel, h('img', { src: url, alt: `Screenshot of ${name}`, class: 'screenshot' }));
    }
  };
  const refresh = async () => {
    try {
      const d = await call<Details>('GET', `/api/vms/${ns}/${name}`);
      // DataVolumes change without the VM or VMI changing: re-read while one imports.
      const dvVolumes = (
        (d.vm.spec?.template?.spec?.volumes ?? []) as Array<{ dataVolume?: unknown }>
      ).filter((v) => v.dataVolume).length;
      const dvs = d.dataVolumes ?? [];
      const importing = dvs.length < dvVolumes || dvs.some((dv) => dv.status?.phase !== 'Succeeded');
      if (importing && !timer)
        timer = setTimeout(() => {
          timer = undefined;
          void refresh();
        }, 3_000);
      mount(body, summary(d), disksSection(d.vm, d.dataVolumes ?? []));
      mount(
        more,
        conditionsTable('VM conditions', d.vm),
        conditionsTable('VMI conditions', d.vmi),
        eventsTable(d.events),
      );
    } catch (e) {
      if (e instanceof ApiFailure && e.code === 404) {
        mount(body, h('p', {}, `VirtualMachine ${ns}/${name} not found.`));
        mount(more);
      } else errorBox.textContent = (e as Error).message;
    }
  };
  mount(
    root,
    h('p', {}, h('a', { href: '#/' }, '← All virtual machines')),
    h('h2', {}, `${ns}/${name}`),
    h(
      'div',
      { class: 'actions', role: 'toolbar', 'aria-label': 'Actions' },
      ACTIONS.map(([a, label]) =>
        h('button', { type: 'button', 'data-action': a, onclick: () => void act(a) }, label),
      ),
      h(
        'button',
        { type: 'button', class: 'danger', 'data-action': 'delete', onclick: () => void del() },
        'Delete',
      ),
    ),
    h(
      'div',
      { class: 'actions', role: 'toolbar', 'aria-label': 'Access' },
      h(
        'button',
        { type: 'button', 'data-open': 'console', onclick: () => void open('console') },
        'Serial console',
      ),
      h('button', { type: 'button', 'data-open': 'vnc', onclick: () => void open('vnc') }, 'VNC'),
      h(
        'button',
        { type: 'button', 'data-open': 'screenshot', onclick: () => void open('screenshot') },
        'Screenshot',
      ),
      h('button', { type: 'button', 'data-open': 'yaml', onclick: () => void open('yaml') }, 'Edit YAML'),
    ),
    status,
    errorBox,
    panel,
    body,
    usage,
    more,
  );
  const stopUsage = showUsageGraphs(usage, ns, name);
  // Re-read the page whenever the VM or its VMI changes (at most every 300 ms).
  let timer: ReturnType<typeof setTimeout> | undefined;
  const onChange = () => {
    if (timer) return;
    timer = setTimeout(() => {
      timer = undefined;
      void refresh();
    }, 300);
  };
  const stops = [watchObjects('vm', ns, onChange), watchObjects('vmi', ns, onChange)];
  void refresh();
  return () => {
    for (const s of stops) s();
    stopUsage();
    closePanel?.();
    if (timer) clearTimeout(timer);
  };
}
