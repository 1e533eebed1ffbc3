/**
 * The Manager and a sample controller built from the public primitives, on the embedded
 * store and (when built) a real kube-apiserver: objects are reconciled, owned children
 * re-created, events folded; leader election lets one of two managers work and hands over
 * on shutdown; shutdown waits for in-flight reconciles.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConfigMapType,
  EmbeddedStore,
  EventType,
  Expectations,
  KubeClient,
  type KubeObject,
  Manager,
  NamespaceType,
  type ObjectClient,
  reconcilerFunc,
} from '../../../src/controllers';
import { integration } from '../../support/integration';
import { available, sharedControlPlane, unavailableReason } from '../../support/kube';
import { ensureWidgetCrd, eventually, WidgetType } from './contract';
import { addSampleController, type ConfigMap, type Widget } from './sample-controller';

interface Backend {
  client: ObjectClient;
  close(): Promise<void>;
}

function managerSuite(name: string, setup: () => Promise<Backend | undefined>) {
  describe(`Manager: ${name}`, () => {
    let b: Backend | undefined;
    const ns = `mgr-${Date.now().toString(36)}-${Math.floor(Math.random() * 1e4)}`;
    beforeAll(async () => {
      b = await setup();
      if (!b) return;
      await ensureWidgetCrd(b.client);
      await b.client.create(NamespaceType, { metadata: { name: ns } });
    });
    afterAll(async () => {
      if (!b) return;
      await b.client.delete(NamespaceType, ns).catch(() => {});
      await b.close();
    });
    const widget = (n: string, size: number): Widget => ({
      apiVersion: `${WidgetType.group}/${WidgetType.version}`,
      kind: 'Widget',
      metadata: { name: n, namespace: ns },
      spec: { size },
    });

    it('a sample controller reconciles objects, re-creates owned children and records folded events', async (ctx) => {
      if (!b)
        ctx.skip(
          `${name} backend unavailable (see the integration() warning): waits for the kube binaries built by scripts/kube/build.sh`,
        );
      const c = b!.client;
      const mgr = new Manager({
        client: c,
        namespace: ns,
        informers: { backoff: { initialMs: 50, maxMs: 1000 } },
      });
      const recorder = mgr.eventRecorder('sample-controller');
      addSampleController(mgr, WidgetType, { recorder, namespace: ns });
      await mgr.start();
      try {
        for (let i = 0; i < 5; i++) await c.create(WidgetType, widget(`w${i}`, i));
        await eventually('all widgets Ready with children', async () => {
          const ws = (await c.list<Widget>(WidgetType, { namespace: ns })).items;
          const cms = (await c.list<ConfigMap>(ConfigMapType, { namespace: ns })).items;
          return (
            ws.length === 5 &&
            ws.every((w) => w.status?.phase === 'Ready') &&
            cms.filter((m) => m.metadata?.name?.endsWith('-child')).length === 5
          );
        });
        const child = await c.get<ConfigMap>(ConfigMapType, 'w3-child', ns);
        expect(child.data).toEqual({ size: '3' });
        expect(child.metadata?.ownerReferences?.[0]).toMatchObject({
          kind: 'Widget',
          name: 'w3',
          controller: true,
        });

        await c.patch(WidgetType, 'w3', { spec: { size: 30 } }, { namespace: ns, type: 'merge' });
        await eventually(
          'child follows the spec',
          async () => (await c.get<ConfigMap>(ConfigMapType, 'w3-child', ns)).data?.size === '30',
        );
        await eventually(
          'observedGeneration follows',
          async () => (await c.get<Widget>(WidgetType, 'w3', ns)).status?.observedGeneration === 2,
        );

        await c.delete(ConfigMapType, 'w1-child', { namespace: ns });
        await eventually('deleted child is re-created', async () =>
          c.get(ConfigMapType, 'w1-child', ns).then(
            () => true,
            () => false,
          ),
        );
        // The child exists before its reconcile records the event: wait for the folded count.
        type Ev = KubeObject & { reason?: string; count?: number; involvedObject?: { name?: string } };
        const listCreated = async () => {
          await recorder.flush();
          const events = (await c.list<Ev>(EventType, { namespace: ns })).items;
          return events.filter((e) => e.reason === 'ChildCreated');
        };
        await eventually('the re-creation folded into its event', async () =>
          (await listCreated()).some((e) => e.involvedObject?.name === 'w1' && e.count === 2),
        ).catch(() => undefined);
        const created = await listCreated();
        expect(created.map((e) => e.involvedObject?.name).sort()).toEqual(['w0', 'w1', 'w2', 'w3', 'w4']);
        expect(created.find((e) => e.involvedObject?.name === 'w1')?.count).toBe(2);
      } finally {
        await mgr.stop();
      }
    });

    it('leader election: one of two managers reconciles; the other takes over when it stops', async (ctx) => {
      if (!b)
        ctx.skip(
          `${name} backend unavailable (see the integration() warning): waits for the kube binaries built by scripts/kube/build.sh`,
        );
      const c = b!.client;
      const seen: string[] = [];
      const make = (id: string) => {
        const m = new Manager({
          client: c,
          namespace: ns,
          leaderElection: {
            name: 'sample-lease',
            namespace: ns,
            identity: id,
            leaseDurationMs: 3000,
            renewDeadlineMs: 2000,
            retryPeriodMs: 200,
          },
        });
        m.addController({
          name: `le-${id}`,
          forType: ConfigMapType,
          labelSelector: 'le=yes',
          reconciler: reconcilerFunc(async (req) => {
            seen.push(`${id}:${req.name}`);
          }),
        });
        return m;
      };
      const m1 = make('one');
      await m1.start();
      const m2 = make('two');
      const m2started = m2.start();
      try {
        expect(m1.isLeader()).toBe(true);
        expect(m2.isLeader()).toBe(false);
        await c.create(ConfigMapType, { metadata: { name: 'le-a', namespace: ns, labels: { le: 'yes' } } });
        await eventually('leader reconciles', async () => seen.includes('one:le-a'));
        expect(seen.some((s) => s.startsWith('two:'))).toBe(false);
        await m1.stop();
        await m2started;
        expect(m2.isLeader()).toBe(true);
        await c.create(ConfigMapType, { metadata: { name: 'le-b', namespace: ns, labels: { le: 'yes' } } });
        await eventually('new leader reconciles', async () => seen.includes('two:le-b'));
        const lease = await c.get<
          KubeObject & { spec?: { holderIdentity?: string; leaseTransitions?: number } }
        >(
          { group: 'coordination.k8s.io', version: 'v1', kind: 'Lease', plural: 'leases', namespaced: true },
          'sample-lease',
          ns,
        );
        expect(lease.spec?.holderIdentity).toBe('two');
        expect(lease.spec?.leaseTransitions).toBeGreaterThanOrEqual(1);
      } finally {
        await m1.stop();
        await m2.stop();
      }
    });

    it('graceful shutdown waits for in-flight reconciles and stops handing out keys', async (ctx) => {
      if (!b)
        ctx.skip(
          `${name} backend unavailable (see the integration() warning): waits for the kube binaries built by scripts/kube/build.sh`,
        );
      const c = b!.client;
      let release!: () => void;
      const gate = new Promise<void>((r) => {
        release = r;
      });
      let started = 0;
      let finished = 0;
      const m = new Manager({ client: c, namespace: ns });
      m.addController({
        name: 'slow',
        forType: ConfigMapType,
        labelSelector: 'slow=yes',
        workers: 1,
        reconciler: reconcilerFunc(async () => {
          started++;
          await gate;
          finished++;
        }),
      });
      await m.start();
      await c.create(ConfigMapType, { metadata: { name: 'slow-1', namespace: ns, labels: { slow: 'yes' } } });
      await c.create(ConfigMapType, { metadata: { name: 'slow-2', namespace: ns, labels: { slow: 'yes' } } });
      await eventually('first reconcile in flight', async () => started === 1);
      let stopped = false;
      const stopping = m.stop().then(() => {
        stopped = true;
      });
      await new Promise((r) => setTimeout(r, 50));
      expect(stopped).toBe(false);
      release();
      await stopping;
      expect(finished).toBe(1);
      expect(started).toBe(1); // slow-2 was never handed out after shutdown began
    });
  });
}

managerSuite('embedded store', async () => {
  const store = await EmbeddedStore.open();
  return { client: store, close: () => store.close() };
});

managerSuite('real kube-apiserver', async () => {
  if (!integration('kube-apiserver', available(), unavailableReason)) return undefined;
  const cp = await sharedControlPlane();
  const client = KubeClient.fromKubeconfig(cp.kubeconfigPath, { qps: 200, burst: 400 });
  return { client, close: async () => client.close() };
});

describe('Expectations', () => {
  it('is satisfied once every expected create and delete is observed, or when the record expires', () => {
    let t = 0;
    const e = new Expectations(1000, () => t);
    expect(e.satisfied('k')).toBe(true);
    e.expectCreations('k', 2);
    expect(e.satisfied('k')).toBe(false);
    e.creationObserved('k');
    expect(e.pending('k')).toEqual({ add: 1, del: 0 });
    e.creationObserved('k');
    expect(e.satisfied('k')).toBe(true);
    e.expectDeletions('k', 1);
    e.raise('k', 1, 0);
    e.deletionObserved('k');
    expect(e.satisfied('k')).toBe(false);
    t = 1001;
    expect(e.satisfied('k')).toBe(true);
    e.delete('k');
    expect(e.pending('k')).toBeUndefined();
  });
});
