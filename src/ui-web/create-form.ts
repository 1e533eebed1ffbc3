/**
 * Create a VM from a form: a containerDisk image (or a kernel-boot image), CPU, memory,
 * run strategy and network. The server admits it (local mode with upstream's webhook rules,
 * a cluster's API server with virt-api's); each refusal's field is shown under its input.
 */
import { ApiFailure, type Cause, call } from './api';
import { h, mount } from './dom';

/** The form's values. */
export interface VmForm {
  name: string;
  namespace: string;
  image: string;
  cores: string;
  memory: string;
  runStrategy: string;
  network: 'pod' | 'none';
}

/** The VirtualMachine the form describes. */
export function vmFromForm(f: VmForm): Record<string, unknown> {
  const cores = Number(f.cores);
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name: f.name, namespace: f.namespace },
    spec: {
      runStrategy: f.runStrategy,
      template: {
        metadata: { labels: { 'kubevirt.io/vm': f.name } },
        spec: {
          domain: {
            cpu: { cores: Number.isFinite(cores) ? cores : f.cores },
            devices: {
              disks: [{ name: 'root', disk: { bus: 'virtio' } }],
              ...(f.network === 'none' ? { autoattachPodInterface: false } : {}),
            },
            resources: { requests: { memory: f.memory } },
          },
          ...(f.network === 'pod' ? { networks: [{ name: 'default', pod: {} }] } : {}),
          volumes: [{ name: 'root', containerDisk: { image: f.image } }],
        },
      },
    },
  };
}

/** Which input a field path belongs to. */
function inputFor(field: string): keyof VmForm | undefined {
  if (/^metadata\.name/.test(field)) return 'name';
  if (/^metadata\.namespace/.test(field)) return 'namespace';
  if (/volumes\[0\]|containerDisk/.test(field)) return 'image';
  if (/domain\.cpu|resources\.(requests|limits)\.cpu/.test(field)) return 'cores';
  if (/memory/.test(field)) return 'memory';
  if (/runStrategy|running/.test(field)) return 'runStrategy';
  if (/networks|interfaces/.test(field)) return 'network';
  return undefined;
}

/** Shows the form in `root`. */
export function showCreateForm(root: HTMLElement, namespace: string): () => void {
  const fields: Array<[keyof VmForm, string, HTMLInputElement | HTMLSelectElement]> = [
    ['name', 'Name', h('input', { required: true, value: '', autocomplete: 'off' })],
    ['namespace', 'Namespace', h('input', { required: true, value: namespace })],
    [
      'image',
      'containerDisk image',
      h('input', { required: true, value: '', placeholder: 'quay.io/containerdisks/fedora:latest' }),
    ],
    ['cores', 'CPU cores', h('input', { value: '1', inputmode: 'numeric' })],
    ['memory', 'Memory', h('input', { value: '128Mi' })],
    [
      'runStrategy',
      'Run strategy',
      h(
        'select',
        {},
        ['Always', 'Halted', 'Manual', 'RerunOnFailure'].map((s) => h('option', { value: s }, s)),
      ),
    ],
    [
      'network',
      'Network',
      h(
        'select',
        {},
        h('option', { value: 'pod' }, 'pod network (masquerade)'),
        h('option', { value: 'none' }, 'none'),
      ),
    ],
  ];
  const errors = new Map<keyof VmForm, HTMLElement>();
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
      return h('div', { class: 'field' }, h('label', { for: input.id }, label), input, err);
    }),
    general,
    h('button', { type: 'submit' }, 'Create'),
  );
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
      let shown = false;
      for (const c of causes) {
        const key = inputFor(c.field ?? '');
        const box = key ? errors.get(key) : undefined;
        if (box) {
          box.textContent = `${c.field}: ${c.message ?? ''}`;
          shown = true;
        }
      }
      if (!shown || causes.length === 0) general.textContent = (e as Error).message;
      else general.textContent = (e as Error).message;
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
