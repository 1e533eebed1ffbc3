/**
 * What the ObjectClient contract suite (./contract) and other runtime tests share: the
 * backend fixture, the Widget test kind and its CRD, polling, and watch and deletion helpers.
 */
import {
  AlreadyExistsError,
  ConflictError,
  CustomResourceDefinitionType,
  type KubeObject,
  NotFoundError,
  type ObjectClient,
  type ResourceType,
  type WatchEvent,
} from '../../../src/controllers/runtime';

/** What a backend provides to the suite. */
export interface ContractFixture {
  client: ObjectClient;
  /** Makes the watch history older than `rv` unavailable (the real server's history is already short). */
  compact?: () => Promise<void>;
  /** Whether a garbage collector runs (kube-controller-manager, or the embedded one). */
  garbageCollector: boolean;
  close(): Promise<void>;
}

/** The test kind: a namespaced custom resource with a status subresource. */
export const WidgetType: ResourceType = {
  group: 'contract.kubevirt-ts.io',
  version: 'v1',
  kind: 'Widget',
  plural: 'widgets',
  namespaced: true,
  statusSubresource: true,
};

/** The Widget CustomResourceDefinition. */
export const widgetCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.contract.kubevirt-ts.io' },
  spec: {
    group: WidgetType.group,
    scope: 'Namespaced',
    names: { kind: 'Widget', plural: 'widgets', singular: 'widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        },
      },
    ],
  },
};

/** The test kind's objects. */
export interface Widget extends KubeObject {
  spec?: { size?: number; color?: string; items?: string[]; count?: number };
  status?: { phase?: string };
}

/** Polls `fn` until it returns a truthy value; fails with `what` when it never does. */
export async function eventually<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  tries = 300,
): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await fn();
    if (v) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`never happened: ${what}`);
}

/** Installs the Widget CRD (idempotent) and waits until it is served. */
export async function ensureWidgetCrd(client: ObjectClient): Promise<void> {
  try {
    await client.create(CustomResourceDefinitionType, widgetCrd);
  } catch (err) {
    if (!(err instanceof AlreadyExistsError)) throw err;
  }
  await eventually('the Widget CRD is established and served', async () => {
    try {
      await client.list(WidgetType, { namespace: 'default', limit: 1 });
      return true;
    } catch {
      return false;
    }
  });
}

/** True when `name` no longer exists (NotFound). */
export async function gone(
  client: ObjectClient,
  type: ResourceType,
  name: string,
  namespace?: string,
): Promise<boolean> {
  try {
    await client.get(type, name, namespace);
    return false;
  } catch (err) {
    if (err instanceof NotFoundError) return true;
    throw err;
  }
}

/**
 * Removes every finalizer with a read-modify-write that retries on Conflict: the garbage
 * collector may be updating the same object (e.g. its own foregroundDeletion finalizer).
 */
export async function clearFinalizers(
  client: ObjectClient,
  type: ResourceType,
  name: string,
  namespace?: string,
): Promise<void> {
  for (;;) {
    const cur = await client.get(type, name, namespace);
    try {
      await client.update(type, { ...cur, metadata: { ...cur.metadata, finalizers: [] } });
      return;
    } catch (err) {
      if (!(err instanceof ConflictError)) throw err;
    }
  }
}

/** Collects watch events until `until` says stop. */
export async function collect(
  client: ObjectClient,
  type: ResourceType,
  opts: Parameters<ObjectClient['watch']>[1],
  act: () => Promise<void>,
  until: (evs: WatchEvent<Widget>[]) => boolean,
): Promise<WatchEvent<Widget>[]> {
  const events: WatchEvent<Widget>[] = [];
  const wake = () => {};
  const w = await client.watch<Widget>(type, opts, (ev) => {
    if (ev.type !== 'BOOKMARK') events.push(ev);
    wake();
  });
  try {
    await act();
    await eventually(`watch events ${JSON.stringify(events.map((e) => e.type))}`, async () => until(events));
  } finally {
    w.stop();
  }
  return events;
}

/** What the suite's case files (contract-*.ts) get from the suite: the backend and its namespaces. */
export interface ContractSuite {
  /** The backend's client (from beforeAll on). */
  readonly c: ObjectClient;
  /** The backend's fixture; undefined when the backend is unavailable. */
  readonly f: ContractFixture | undefined;
  /** Two namespaces of this run's own. */
  readonly ns: string;
  readonly ns2: string;
  /** A Widget in `ns`. */
  w(name: string, spec?: Widget['spec'], labels?: Record<string, string>): Widget;
  /** A test that skips (saying why) when the backend is unavailable. */
  test(name: string, fn: () => Promise<void>): void;
  /** A test of cascading deletion, skipped on a backend without a garbage collector. */
  gcTest(name: string, fn: () => Promise<void>): void;
}
