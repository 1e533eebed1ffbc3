/**
 * Uninstall order, as upstream's DeleteAll: the install's CRDs go first, and the
 * components (virt-controller among them) only once the CRDs are gone, so the controllers
 * still run to release their finalizers on the CRDs' objects (a VM's
 * kubevirt.io/virtualMachineControllerFinalize) while the API server drops them.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { CustomResourceDefinitionType, NamespaceType } from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { deleteCrdsFirst } from '../../../src/controllers/virt-operator/apply';
import { MANAGED_BY, MANAGED_BY_LABEL } from '../../../src/controllers/virt-operator/bookkeeping';
import { DeploymentType, installedTypes } from '../../../src/controllers/virt-operator/resource-types';

const NS = 'kubevirt';
const managed = { [MANAGED_BY_LABEL]: MANAGED_BY };

let store: EmbeddedStore | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
});

describe('deleteCrdsFirst', () => {
  it('deletes only the managed CRDs, leaves the Deployments, and counts the CRDs not yet gone', async () => {
    const s = await EmbeddedStore.open({ types: [...installedTypes] });
    store = s;
    await s.create(NamespaceType, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    // A CRD of the install (the embedded store serves the kubevirt.io kinds itself, so another group).
    await s.create(CustomResourceDefinitionType, {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com', labels: managed },
      spec: {
        group: 'example.com',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
        scope: 'Namespaced',
        versions: [
          { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } } },
        ],
      },
    } as KubeObject);
    await s.create(DeploymentType, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'virt-controller', namespace: NS, labels: managed },
      spec: {
        selector: { matchLabels: { a: 'b' } },
        template: { metadata: { labels: { a: 'b' } }, spec: {} },
      },
    } as KubeObject);

    const first = await deleteCrdsFirst(s, NS);
    expect(first.deleted).toEqual(['CustomResourceDefinition widgets.example.com']);
    expect(first.left).toBe(1);
    // virt-controller stays while the CRDs go.
    expect((await s.list(DeploymentType, { namespace: NS })).items).toHaveLength(1);
    expect(await deleteCrdsFirst(s, NS)).toEqual({ deleted: [], left: 0 });
  });
});
