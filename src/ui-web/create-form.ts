/**
 * Create a VM from a form: a disk source (a containerDisk image, a DataVolume that
 * imports a URL, or an existing PVC), an optional instance type and preference (else CPU
 * cores and memory), run strategy and network. The server admits it (local mode with
 * upstream's webhook rules, a cluster's API server with virt-api's); each refusal's field
 * is shown under its input.
 */
import { ApiFailure, type Cause, call } from './api';
import { h, mount } from './dom';
import { SOURCE_LABELS, type VmForm, vmFromForm } from './vm-from-form';

/** Which input a field path belongs to. */
function inputFor(field: string): keyof VmForm | undefined {
  if (/^metadata\.name/.test(field)) return 'name';
  if (/^metadata\.namespace/.test(field)) return 'namespace';
  if (/storage|resources\.requests\.storage/.test(field) && /dataVolumeTemplates/.test(field)) return 'size';
  if (/volumes\[0\]|containerDisk|dataVolumeTemplates|persistentVolumeClaim/.test(field)) return 'image';
  if (/spec\.instancetype/.test(field)) return 'instancetype';
  if (/spec\.preference/.test(field)) return 'preference';
  if (/domain\.cpu|resources\.(requests|limits)\.cpu/.test(field)) return 'cores';
  if (/memory/.test(field)) return 'memory';
  if (/runStrategy|running/.test(field)) return 'runStrategy';
  if (/networks|interfaces/.test(field)) return 'network';
  return undefined;
}

const select = (options: Array<[value: string, text: string]>) =>
  h(
    'select',
    {},
    options.map(([v, t]) => h('option', { value: v }, t)),
  );

/**
 * Fills a select with the catalog's entries (`Kind/name` values) after "none", keeping the
 * user's choice when the new catalog still offers it.
 */
function fillRefs(sel: HTMLSelectElement, none: string, refs: Array<{ kind: string; name: string }>): void {
  const chosen = sel.value;
  mount(
    sel,
    h('option', { value: '' }, none),
    ...refs.map((r) => h('option', { value: `${r.kind}/${r.name}` }, `${r.name} (${r.kind})`)),
  );
  if (refs.some((r) => `${r.kind}/${r.name}` === chosen)) sel.value = chosen;
}

/** Shows the form in `root`. */
export function showCreateForm(root: HTMLElement, namespace: string): () => void {
  const instancetype = select([['', 'none: CPU and memory below']]);
  const preference = select([['', 'none']]);
  const source = select(Object.entries(SOURCE_LABELS));
  const fields: Array<[keyof VmForm, string, HTMLInputElement | HTMLSelectElement]> = [
    ['name', 'Name', h('input', { required: true, value: '', autocomplete: 'off' })],
    ['namespace', 'Namespace', h('input', { required: true, value: namespace })],
    ['source', 'Disk source', source],
    ['image', 'containerDisk image', h('input', { required: true, value: '', placeholder: '' })],
    ['size', 'Disk size', h('input', { value: '1Gi' })],
    ['instancetype', 'Instance type', instancetype],
    ['preference', 'Preference', preference],
    ['cores', 'CPU cores', h('input', { value: '1', inputmode: 'numeric' })],
    ['memory', 'Memory', h('input', { value: '128Mi' })],
    [
      'runStrategy',
      'Run strategy',
      select(['Always', 'Halted', 'Manual', 'RerunOnFailure'].map((s) => [s, s])),
    ],
    [
      'network',
      'Network',
      select([
        ['pod', 'pod network (masquerade)'],
        ['none', 'none'],
      ]),
    ],
  ];
  const errors = new Map<keyof VmForm, HTMLElement>();
  const rows = new Map<keyof VmForm, HTMLElement>();
  const labels = new Map<keyof VmForm, HTMLLabelElement>();
  const general = h('div', { class: 'error', role: 'alert' });
  const form = h(
    'form',
    { class: 'create', novalidate: true },
    fields.map(([key, label, input]) => {
      input.id = `f-${key}`;
      input.name = key;
      const err = h('div', { class: 'field-error', id: `f-${key}-error`, role: 'alert' });
      input.setAttribute('aria-describedby', err.id);
      errors.set(key, err);
      const l = h('label', { for: input.id }, label);
      labels.set(key, l);
      const row = h('div', { class: 'field' }, l, input, err);
      rows.set(key, row);
      return row;
    }),
    general,
    h('button', { type: 'submit' }, 'Create'),
  );
  const input = (k: keyof VmForm) => fields.find(([key]) => key === k)?.[2] as HTMLInputElement;
  // What the source and instance type make relevant: the image field's meaning, the size
  // for an import, CPU and memory only without an instance type.
  const adapt = () => {
    const src = source.value as VmForm['source'];
    const l = labels.get('image');
    if (l) l.textContent = src === 'http' ? 'Image URL' : src === 'pvc' ? 'PVC name' : 'containerDisk image';
    input('image').placeholder =
      src === 'http'
        ? 'http://server/disk.qcow2'
        : src === 'pvc'
          ? 'my-disk'
          : 'quay.io/containerdisks/fedora:latest';
    rows.get('size')?.toggleAttribute('hidden', src !== 'http');
    for (const k of ['cores', 'memory'] as const)
      rows.get(k)?.toggleAttribute('hidden', instancetype.value !== '');
  };
  source.addEventListener('change', adapt);
  instancetype.addEventListener('change', adapt);
  adapt();
  // Only the latest namespace's catalog is shown: an earlier request answering late
  // (the first load, a namespace typed in two steps) must not replace it.
  let catalogRequest = 0;
  const loadCatalog = async (ns: string) => {
    const mine = ++catalogRequest;
    const c = await call<{
      instancetypes: Array<{ kind: string; name: string }>;
      preferences: Array<{ kind: string; name: string }>;
    }>('GET', `/api/catalog?namespace=${encodeURIComponent(ns)}`).catch(() => ({
      instancetypes: [],
      preferences: [],
    }));
    if (mine !== catalogRequest) return;
    fillRefs(instancetype, 'none: CPU and memory below', c.instancetypes);
    fillRefs(preference, 'none', c.preferences);
    adapt();
  };
  input('namespace').addEventListener('change', () => void loadCatalog(input('namespace').value.trim()));
  void loadCatalog(namespace);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    for (const e of errors.values()) e.textContent = '';
    general.textContent = '';
    const values = Object.fromEntries(fields.map(([k, , i]) => [k, i.value.trim()])) as unknown as VmForm;
    try {
      await call('POST', '/api/vms', vmFromForm(values));
      location.hash = `#/vm/${encodeURIComponent(values.namespace)}/${encodeURIComponent(values.name)}`;
    } catch (e) {
      const causes: Cause[] = e instanceof ApiFailure ? e.causes : [];
      for (const c of causes) {
        const key = inputFor(c.field ?? '');
        const box = key ? errors.get(key) : undefined;
        if (box) box.textContent = `${c.field}: ${c.message ?? ''}`;
      }
      general.textContent = (e as Error).message;
    }
  });
  mount(
    root,
    h('p', {}, h('a', { href: '#/' }, '← All virtual machines')),
    h('h2', {}, 'Create a virtual machine'),
    form,
  );
  fields[0]?.[2].focus();
  return () => {};
}
