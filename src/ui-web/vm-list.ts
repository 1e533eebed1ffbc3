/** The VM list: a namespace (or all), live through watches of VMs and VMIs. */
import { type Obj, watchObjects } from './api';
import { age, h, mount } from './dom';

/** CPU as the VM asks for it: cores x sockets x threads, else the CPU request. */
export function cpuOf(vm: Obj): string {
  const domain = vm.spec?.template?.spec?.domain ?? {};
  const c = domain.cpu;
  if (c?.cores || c?.sockets || c?.threads)
    return String((c.cores ?? 1) * (c.sockets ?? 1) * (c.threads ?? 1));
  return String(domain.resources?.requests?.cpu ?? (vm.spec?.instancetype?.name ? '' : '1'));
}

/** Memory as the VM asks for it: guest memory, else the memory request. */
export function memoryOf(vm: Obj): string {
  const domain = vm.spec?.template?.spec?.domain ?? {};
  return String(domain.memory?.guest ?? domain.resources?.requests?.memory ?? '');
}

/** The row cells of one VM. */
function row(vm: Obj, vmi: Obj | undefined, allNamespaces: boolean, now: number): HTMLTableRowElement {
  const ns = vm.metadata?.namespace ?? '';
  const name = vm.metadata?.name ?? '';
  const ip =
    (vmi?.status?.interfaces ?? []).find((i: { ipAddress?: string }) => i.ipAddress)?.ipAddress ?? '';
  const it = vm.spec?.instancetype?.name;
  return h(
    'tr',
    { 'data-vm': `${ns}/${name}` },
    h('td', {}, h('a', { href: `#/vm/${encodeURIComponent(ns)}/${encodeURIComponent(name)}` }, name)),
    allNamespaces && h('td', { class: 'ns' }, ns),
    h('td', { class: 'status' }, vm.status?.printableStatus ?? ''),
    h('td', { class: 'node narrow-hide' }, vmi?.status?.nodeName ?? ''),
    h('td', { class: 'ip narrow-hide' }, ip),
    h('td', { class: 'age' }, age(vm.metadata?.creationTimestamp, now)),
    h('td', { class: 'size narrow-hide' }, it ? it : `${cpuOf(vm)} CPU, ${memoryOf(vm)}`),
  );
}

/** Renders the table of `vms` (with their VMIs by `ns/name`) sorted by namespace and name. */
export function renderTable(
  vms: Map<string, Obj>,
  vmis: Map<string, Obj>,
  allNamespaces: boolean,
): HTMLTableElement {
  const now = Date.now();
  const keys = [...vms.keys()].sort();
  return h(
    'table',
    { class: 'vms', 'aria-label': 'Virtual machines' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', { scope: 'col' }, 'Name'),
        allNamespaces && h('th', { scope: 'col' }, 'Namespace'),
        h('th', { scope: 'col' }, 'Status'),
        h('th', { scope: 'col', class: 'narrow-hide' }, 'Node'),
        h('th', { scope: 'col', class: 'narrow-hide' }, 'IP'),
        h('th', { scope: 'col' }, 'Age'),
        h('th', { scope: 'col', class: 'narrow-hide' }, 'CPU / memory'),
      ),
    ),
    h(
      'tbody',
      {},
      keys.map((k) => row(vms.get(k) as Obj, vmis.get(k), allNamespaces, now)),
    ),
  );
}

/** Shows the list in `root`; returns a function that stops its watches. */
export function showVmList(root: HTMLElement, namespaces: string[], initial: string): () => void {
  let stops: Array<() => void> = [];
  let rerender: (() => void) | undefined;
  const tableBox = h('div', { class: 'table-box', 'aria-live': 'polite' });
  const select = h(
    'select',
    { id: 'ns-select', 'aria-label': 'Namespace' },
    h('option', { value: '' }, 'All namespaces'),
    namespaces.map((n) => {
      const o = h('option', { value: n }, n);
      if (n === initial) o.selected = true;
      return o;
    }),
  );
  const start = (ns: string) => {
    for (const s of stops) s();
    let vms = new Map<string, Obj>();
    let vmis = new Map<string, Obj>();
    let queued = false;
    // One render per frame however many events arrive.
    const render = () => {
      if (queued) return;
      queued = true;
      requestAnimationFrame(() => {
        queued = false;
        mount(
          tableBox,
          vms.size === 0
            ? h('p', { class: 'empty' }, 'No virtual machines.')
            : renderTable(vms, vmis, ns === ''),
        );
      });
    };
    rerender = render;
    stops = [
      watchObjects('vm', ns, (m) => {
        vms = m;
        render();
      }),
      watchObjects('vmi', ns, (m) => {
        vmis = m;
        render();
      }),
    ];
    render();
  };
  const others = h(
    'a',
    { class: 'button', href: `#/resources/${encodeURIComponent(initial)}` },
    'Other kinds',
  );
  select.addEventListener('change', () => {
    others.setAttribute('href', `#/resources/${encodeURIComponent(select.value)}`);
    start(select.value);
  });
  // Ages move on without events.
  const tick = setInterval(() => rerender?.(), 10_000);
  mount(
    root,
    h(
      'div',
      { class: 'toolbar' },
      h('label', { for: 'ns-select' }, 'Namespace '),
      select,
      h('a', { class: 'button', href: '#/create' }, 'Create VM'),
      ' ',
      others,
    ),
    tableBox,
  );
  start(initial);
  return () => {
    clearInterval(tick);
    for (const s of stops) s();
  };
}
