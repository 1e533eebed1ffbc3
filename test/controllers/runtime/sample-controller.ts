/**
 * A sample controller built only from the public primitives (`kubevirt-ts/controllers`):
 * for every Widget it keeps a ConfigMap `<name>-child` (owned by the Widget, data from
 * its spec) and reports `status.phase: Ready` with `observedGeneration`. Used by the
 * manager tests on both backends and by the runtime benchmark.
 */
import {
  ConfigMapType,
  type Controller,
  type EventRecorder,
  Expectations,
  type Informer,
  isAlreadyExists,
  isNotFound,
  type KubeObject,
  type Manager,
  type ObjectClient,
  type Reconciler,
  type ResourceType,
} from '../../../src/controllers';

export type Widget = KubeObject & {
  spec?: { size?: number };
  status?: { phase?: string; observedGeneration?: number };
};
export type ConfigMap = KubeObject & { data?: Record<string, string> };

export interface SampleController {
  reconciler: Reconciler;
  expectations: Expectations;
  controller: Controller;
}

/** Registers the sample controller on `mgr` for `widgetType`. */
export function addSampleController(
  mgr: Manager,
  widgetType: ResourceType,
  options: { workers?: number; recorder?: EventRecorder; namespace?: string } = {},
): SampleController {
  const client: ObjectClient = mgr.client;
  const expectations = new Expectations();
  const widgets = mgr.informers.informerFor<Widget>(widgetType, { namespace: options.namespace });
  const children: Informer<ConfigMap> = mgr.informers.informerFor<ConfigMap>(ConfigMapType, {
    namespace: options.namespace,
  });
  const ownerKey = (o: KubeObject) => {
    const ref = o.metadata?.ownerReferences?.find((r) => r.controller && r.kind === widgetType.kind);
    return ref ? `${o.metadata?.namespace}/${ref.name}` : undefined;
  };
  children.addEventHandler({
    onAdd: (o) => {
      const k = ownerKey(o);
      if (k) expectations.creationObserved(k);
    },
  });
  const reconciler: Reconciler = {
    async reconcile(req) {
      const key = `${req.namespace}/${req.name}`;
      const w = widgets.indexer.getByName(req.name, req.namespace);
      if (!w || w.metadata?.deletionTimestamp) {
        expectations.delete(key);
        return; // the garbage collector removes the child
      }
      if (!expectations.satisfied(key)) return; // our create is not in the cache yet
      const want = String(w.spec?.size ?? 0);
      const childName = `${req.name}-child`;
      const child = children.indexer.getByName(childName, req.namespace);
      if (!child) {
        expectations.expectCreations(key, 1);
        try {
          await client.create(ConfigMapType, {
            apiVersion: 'v1',
            kind: 'ConfigMap',
            metadata: {
              name: childName,
              namespace: req.namespace,
              ownerReferences: [
                {
                  apiVersion: `${widgetType.group}/${widgetType.version}`,
                  kind: widgetType.kind,
                  name: req.name,
                  uid: w.metadata!.uid!,
                  controller: true,
                  blockOwnerDeletion: true,
                },
              ],
            },
            data: { size: want },
          } as ConfigMap);
          options.recorder?.event(w, 'Normal', 'ChildCreated', `created ConfigMap ${childName}`);
        } catch (err) {
          expectations.creationObserved(key);
          if (!isAlreadyExists(err)) throw err;
        }
      } else if (child.data?.size !== want) {
        await client.patch(
          ConfigMapType,
          childName,
          { data: { size: want } },
          { namespace: req.namespace, type: 'merge' },
        );
      }
      if (w.status?.phase !== 'Ready' || w.status.observedGeneration !== w.metadata?.generation) {
        try {
          await client.patch(
            widgetType,
            req.name,
            { status: { phase: 'Ready', observedGeneration: w.metadata?.generation } },
            { namespace: req.namespace, type: 'merge', subresource: 'status' },
          );
        } catch (err) {
          if (!isNotFound(err)) throw err;
        }
      }
    },
  };
  const controller = mgr.addController({
    name: 'sample',
    forType: widgetType,
    owns: [ConfigMapType],
    reconciler,
    workers: options.workers ?? 2,
    namespace: options.namespace,
  });
  return { reconciler, expectations, controller };
}
