/**
 * The web console's entry: a hash router over the VM list, a VM's page, the create form
 * and the other kinds' lists (`#/resources/NS`). Plain DOM, no framework (see docs/ui.md for why).
 */
import './app.css';
import { call } from './api';
import { showCreateForm } from './create-form';
import { h, mount } from './dom';
import { showResourceLists } from './resource-lists';
import { showVmList } from './vm-list';
import { showVmPage } from './vm-page';

const app = document.getElementById('app') as HTMLElement;
let info: { where: string; namespace: string } = { where: '', namespace: 'default' };
let namespaces: string[] = [];
let leave: (() => void) | undefined;

function route(): void {
  leave?.();
  const view = h('div', { class: 'view' });
  mount(
    app,
    h(
      'header',
      {},
      h('h1', {}, h('a', { href: '#/' }, 'kubevirt-ts')),
      h('span', { class: 'where' }, info.where),
    ),
    view,
  );
  const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
  if (parts[0] === 'vm' && parts[1] && parts[2]) leave = showVmPage(view, parts[1], parts[2]);
  else if (parts[0] === 'create') leave = showCreateForm(view, info.namespace);
  else if (parts[0] === 'resources') leave = showResourceLists(view, parts[1] ?? info.namespace);
  else leave = showVmList(view, namespaces, info.namespace);
}

async function boot(): Promise<void> {
  try {
    info = await call('GET', '/api/info');
    namespaces = (await call<{ items: string[] }>('GET', '/api/namespaces')).items;
  } catch (e) {
    mount(app, h('p', { class: 'error', role: 'alert' }, (e as Error).message));
    return;
  }
  if (!namespaces.includes(info.namespace)) namespaces.unshift(info.namespace);
  window.addEventListener('hashchange', route);
  route();
}

void boot();
