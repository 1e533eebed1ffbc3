/**
 * CDI's example manifests on the real cluster (test/support/cdi-examples.ts says which and
 * why): every example that needs no outside network is applied, with its http URL pointed
 * at the test's disk server and its registry URL at the tiny guest's containerDisk in the
 * node's image store, and each DataVolume it makes reaches Succeeded. Run by
 * datavolume-clone.test.ts on its stack (a pool big enough for the registry examples' 5Gi).
 */
import type { CustomObjectsApi, KubernetesObjectApi } from '@kubernetes/client-node';
import { expect } from 'vitest';
import type { DataVolume } from '../../src/api/generated/cdi/types';
import {
  CDI_EXAMPLES,
  cdiExampleFiles,
  exampleDataVolumes,
  readExample,
  rewriteExample,
} from '../support/cdi-examples';
import { waitFor } from '../support/wait';

export interface ExamplesEnv {
  dir: string;
  namespace: string;
  /** The disk server's base URL (`<server>/boot.qcow2` is the tiny guest's qcow2). */
  server: string;
  containerDisk: string;
  objects: KubernetesObjectApi;
  custom: CustomObjectsApi;
  diagnose: () => Promise<string>;
}

/** Applies the runnable examples (and what they need) and waits for their DataVolumes to succeed. */
export async function runCdiExamples(env: ExamplesEnv): Promise<void> {
  const files = cdiExampleFiles(env.dir).filter((f) => {
    const c = CDI_EXAMPLES[f];
    return c && 'run' in c;
  });
  const rewritten = (file: string) => {
    const c = CDI_EXAMPLES[file];
    const o = readExample(env.dir, file);
    return c && 'run' in c
      ? rewriteExample(o, c.run, env)
      : { ...o, metadata: { ...o.metadata, namespace: env.namespace } };
  };
  const needed = new Set(
    files.flatMap((f) => {
      const c = CDI_EXAMPLES[f];
      return c && 'run' in c ? (c.needs ?? []) : [];
    }),
  );
  const applied: string[] = [];
  const start = Date.now();
  // What they need that is not an example run itself (the endpoint Secret), then the examples.
  for (const file of [...[...needed].filter((f) => !files.includes(f)), ...files]) {
    await env.objects.create(rewritten(file) as never);
    applied.push(file);
  }
  const dvs = files.flatMap((f) => exampleDataVolumes(rewritten(f)).map((name) => ({ file: f, name })));
  expect(dvs.length).toBeGreaterThanOrEqual(9);
  const done = new Map<string, number>();
  await waitFor(
    `the examples' DataVolumes Succeeded (${dvs.map((d) => d.name).join(', ')})`,
    async () => {
      for (const { file, name } of dvs) {
        if (done.has(name)) continue;
        const d = (await env.custom
          .getNamespacedCustomObject({
            group: 'cdi.kubevirt.io',
            version: 'v1beta1',
            plural: 'datavolumes',
            namespace: env.namespace,
            name,
          })
          .catch(() => undefined)) as DataVolume | undefined;
        if (d?.status?.phase === 'Failed')
          throw new Error(
            `${file}: DataVolume ${name} Failed: ${JSON.stringify(d.status)}\n${await env.diagnose()}`,
          );
        if (d?.status?.phase === 'Succeeded') done.set(name, Date.now() - start);
      }
      return done.size === dvs.length;
    },
    600_000,
    500,
  ).catch(async (e) => {
    if (String(e).includes('Failed:')) throw e;
    throw new Error(`${e}\n${await env.diagnose()}`);
  });
  for (const { file, name } of dvs)
    process.stdout.write(
      `CDI example ${file}: DataVolume ${name} Succeeded ${done.get(name)} ms after the examples were applied\n`,
    );
}
