/**
 * The ObjectClient contract: one suite, run against every backend (the embedded store in
 * process, the embedded store over its unix-socket REST server through KubeClient, and a
 * real kube-apiserver). Each backend file supplies a fixture; the tests only use the port.
 * The cases are in contract-crud.ts, contract-watch.ts and contract-gc.ts; the fixture,
 * the Widget kind and helpers in contract-support.ts.
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { NamespaceType, type ObjectClient } from '../../../src/controllers/runtime';
import { crudContract } from './contract-crud';
import { gcContract } from './contract-gc';
import { type ContractFixture, type ContractSuite, ensureWidgetCrd, type Widget } from './contract-support';
import { watchContract } from './contract-watch';

export {
  type ContractFixture,
  clearFinalizers,
  ensureWidgetCrd,
  eventually,
  WidgetType,
  widgetCrd,
} from './contract-support';

/** Registers the contract tests for one backend. */
export function objectClientContract(
  backend: string,
  setup: () => Promise<ContractFixture | undefined>,
): void {
  describe(`ObjectClient contract: ${backend}`, () => {
    let f: ContractFixture | undefined;
    let c: ObjectClient;
    const ns = `contract-${Date.now().toString(36)}-${Math.floor(Math.random() * 1e6).toString(36)}`;
    const ns2 = `${ns}-b`;
    const w = (
      name: string,
      spec: Widget['spec'] = { size: 1 },
      labels?: Record<string, string>,
    ): Widget => ({
      apiVersion: 'contract.kubevirt-ts.io/v1',
      kind: 'Widget',
      metadata: { name, namespace: ns, labels },
      spec,
    });

    beforeAll(async () => {
      f = await setup();
      if (!f) return;
      c = f.client;
      await ensureWidgetCrd(c);
      await c.create(NamespaceType, { metadata: { name: ns } });
      await c.create(NamespaceType, { metadata: { name: ns2 } });
    });
    afterAll(async () => {
      if (!f) return;
      for (const n of [ns, ns2]) await c.delete(NamespaceType, n).catch(() => {});
      await f.close();
    });
    const test = (name: string, fn: () => Promise<void>) =>
      it(name, async (ctx) => {
        if (!f)
          ctx.skip(
            'backend unavailable (see the integration() warning): waits for the kube binaries built by scripts/kube/build.sh',
          );
        await fn();
      });
    /** Tests of cascading deletion, which need a garbage collector running. */
    const gcTest = (name: string, fn: () => Promise<void>) =>
      it(name, async (ctx) => {
        if (!f?.garbageCollector)
          ctx.skip('this backend runs no garbage collector, so cascading deletion cannot be observed');
        await fn();
      });

    const s: ContractSuite = {
      get c() {
        return c;
      },
      get f() {
        return f;
      },
      ns,
      ns2,
      w,
      test,
      gcTest,
    };
    crudContract(s);
    watchContract(s);
    gcContract(s);
  });
}
