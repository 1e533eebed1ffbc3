/**
 * The VM's YAML, editable: parsed in the page (the `yaml` package, loaded with this
 * chunk only), then replaced through the server, which admits it as a create. A YAML
 * syntax error is shown with its line; a refusal with each field path and message.
 */
import { parse, stringify } from 'yaml';
import { ApiFailure, call, type Obj } from './api';
import { h, mount } from './dom';

/** The object as the editor shows it: no status, no server-managed fields. */
export function editable(vm: Obj): Obj {
  const { status: _status, ...rest } = vm;
  const meta = { ...(rest.metadata ?? {}) } as Record<string, unknown>;
  delete meta.managedFields;
  return { ...rest, metadata: meta as Obj['metadata'] };
}

/** Opens the editor for `vm` in `panel`; `onSaved` is called after a successful save. */
export function openYamlEditor(panel: HTMLElement, vm: Obj, onSaved: () => void): () => void {
  const ns = vm.metadata?.namespace ?? '';
  const name = vm.metadata?.name ?? '';
  const area = h('textarea', {
    id: 'yaml-text',
    class: 'yaml',
    rows: 24,
    spellcheck: 'false',
    'aria-describedby': 'yaml-error',
  });
  area.value = stringify(editable(vm));
  const error = h('div', { id: 'yaml-error', class: 'error', role: 'alert' });
  const save = async () => {
    error.textContent = '';
    let obj: unknown;
    try {
      obj = parse(area.value);
    } catch (e) {
      error.textContent = `YAML: ${(e as Error).message}`;
      return;
    }
    try {
      await call('PUT', `/api/vms/${encodeURIComponent(ns)}/${encodeURIComponent(name)}`, obj);
      error.textContent = '';
      onSaved();
    } catch (e) {
      const causes = e instanceof ApiFailure ? e.causes : [];
      error.textContent = [
        (e as Error).message,
        ...causes.map((c) => `${c.field ?? ''}: ${c.message ?? ''}`),
      ].join('\n');
    }
  };
  mount(
    panel,
    h('label', { for: 'yaml-text' }, `YAML of ${ns}/${name}`),
    area,
    error,
    h(
      'div',
      { class: 'actions' },
      h('button', { type: 'button', 'data-yaml': 'save', onclick: () => void save() }, 'Save'),
    ),
  );
  area.focus();
  return () => {};
}
