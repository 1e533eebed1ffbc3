/**
 * Fault tests on a real control plane of this file's own: kube-apiserver is restarted
 * while informers watch and a writer keeps writing; the caches must converge on the
 * server's state with no missed update. Two writers racing on one object lose nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ConfigMapType,
  ConflictError,
  Informer,
  KubeClient,
  type KubeObject,
  NamespaceType,
} from '../../../src/controllers/runtime';
import { integration } from '../../support/integration';
import { available, type ControlPlane, startControlPlane, unavailableReason } from '../../support/kube';
import { eventually } from './contract';

type CM = KubeObject & { data?: Record<string, string> };
const run = integration('kube-apiserver', available(), unavailableReason);

describe.skipIf(!run)('informer faults on a real kube-apiserver', () => {
  let cp: ControlPlane;
  let writer: KubeClient;
  let reader: KubeClient;
  const ns = 'faults';

  beforeAll(async () => {
    cp = await startControlPlane({ scheduler: false });
    writer = KubeClient.fromKubeconfig(cp.kubeconfigPath, {
      retries: 100,
      backoff: { initialMs: 100, maxMs: 1000 },
    });
    reader = KubeClient.fromKubeconfig(cp.kubeconfigPath, { retries: 0 });
    await writer.create(NamespaceType, { metadata: { name: ns } });
  });
  afterAll(async () => {
    writer?.close();
    reader?.close();
    await cp?.stop();
  });

  it('kube-apiserver restarted while informers watch: caches converge, no update missed', async () => {
    for (let i = 0; i < 10; i++) {
      await writer.create(ConfigMapType, {
        metadata: { name: `o${i}`, namespace: ns, labels: { fault: 'yes' } },
        data: { v: '0' },
      });
    }
    const informers = [0, 1].map(
      () =>
        new Informer<CM>(reader, ConfigMapType, {
          namespace: ns,
          labelSelector: 'fault=yes',
          backoff: { initialMs: 100, maxMs: 1000 },
          onError: () => {},
        }),
    );
    const seen = informers.map((inf) => {
      const m = new Map<string, string | undefined>();
      inf.addEventHandler({
        onAdd: (o) => m.set(o.metadata!.name!, o.data?.v),
        onUpdate: (_a, o) => m.set(o.metadata!.name!, o.data?.v),
        onDelete: (o) => m.delete(o.metadata!.name!),
      });
      inf.start();
      return m;
    });
    try {
      await Promise.all(informers.map((i) => i.waitForSync()));
      const writes = (async () => {
        for (let round = 1; round <= 5; round++) {
          for (let i = 0; i < 10; i++) {
            await writer.patch(
              ConfigMapType,
              `o${i}`,
              { data: { v: String(round) } },
              { namespace: ns, type: 'merge' },
            );
          }
        }
        await writer.delete(ConfigMapType, 'o9', { namespace: ns });
      })();
      await cp.restartApiServer();
      await writes;
      const truth = (await writer.list<CM>(ConfigMapType, { namespace: ns, labelSelector: 'fault=yes' }))
        .items;
      // (the namespace also holds kube-root-ca.crt, published by kube-controller-manager)
      expect(truth).toHaveLength(9);
      for (const [k, inf] of informers.entries()) {
        await eventually(
          `informer ${k} converges`,
          async () =>
            truth.every(
              (o) =>
                inf.indexer.getByName(o.metadata!.name!, ns)?.metadata?.resourceVersion ===
                o.metadata?.resourceVersion,
            ) && inf.indexer.size === 9,
        );
        for (let i = 0; i < 9; i++) expect(seen[k].get(`o${i}`)).toBe('5');
        expect(seen[k].has('o9')).toBe(false);
        expect(inf.stats.watches).toBeGreaterThanOrEqual(2);
      }
    } finally {
      await Promise.all(informers.map((i) => i.stop()));
    }
  });

  it('two writers racing read-modify-write on one object lose no update', async () => {
    await writer.create(ConfigMapType, { metadata: { name: 'race', namespace: ns }, data: { n: '0' } });
    let conflicts = 0;
    const bump = async (n: number) => {
      for (let i = 0; i < n; i++) {
        for (;;) {
          const cur = await writer.get<CM>(ConfigMapType, 'race', ns);
          try {
            await writer.update(ConfigMapType, { ...cur, data: { n: String(Number(cur.data?.n) + 1) } });
            break;
          } catch (err) {
            if (!(err instanceof ConflictError)) throw err;
            conflicts++;
          }
        }
      }
    };
    await Promise.all([bump(20), bump(20)]);
    expect((await writer.get<CM>(ConfigMapType, 'race', ns)).data?.n).toBe('40');
    expect(conflicts).toBeGreaterThan(0);
  });
});
