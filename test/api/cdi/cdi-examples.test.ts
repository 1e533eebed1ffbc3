/**
 * CDI's example manifests against validation: the table in test/support/cdi-examples.ts
 * names every file; the DataVolumes the cluster suite runs are accepted (as the cluster
 * test rewrites them); the refused ones are refused with their reason, naming the field.
 */
import { describe, expect, it } from 'vitest';
import { validateDataVolume } from '../../../src/api/cdi/validate-datavolume';
import { formatFieldError } from '../../../src/api/errors';
import type { DataVolume } from '../../../src/api/generated/cdi/types';
import {
  CDI_EXAMPLES,
  cdiExampleFiles,
  cdiExamplesDir,
  needsCdiExamples,
  readExample,
  rewriteExample,
} from '../../support/cdi-examples';

const dir = cdiExamplesDir();
const env = {
  namespace: 'examples',
  server: 'http://10.0.0.1:8080',
  containerDisk: 'docker://localhost/x:latest',
};

/** The messages validation gives each DataVolume spec of `o` (a DataVolume's or a VM's templates'). */
// biome-ignore lint/suspicious/noExplicitAny: a manifest of any shape
function problems(o: Record<string, any>): string[] {
  const specs: Record<string, unknown>[] =
    o.kind === 'DataVolume'
      ? [o.spec]
      : (o.spec?.dataVolumeTemplates ?? []).map((t: { spec: unknown }) => t.spec);
  // The API server drops a null field the schema does not mark nullable (`storage:` with nothing).
  const dropNulls = (s: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(s).filter(([, v]) => v !== null));
  return specs.flatMap((spec) =>
    validateDataVolume({
      metadata: { name: o.metadata?.name, namespace: env.namespace },
      spec: dropNulls(spec),
    } as DataVolume).map((e) => formatFieldError('DataVolume', o.metadata?.name ?? '', e)),
  );
}

describe.skipIf(!dir)(`CDI's examples against validation ${needsCdiExamples}`, () => {
  const files = dir ? cdiExampleFiles(dir) : [];

  it('the table names every example, and every entry is a file', () => {
    expect(Object.keys(CDI_EXAMPLES).sort()).toEqual(files);
    expect(files).toHaveLength(26);
  });

  for (const file of files) {
    const c = CDI_EXAMPLES[file];
    if (!c || 'skip' in c) continue;
    if ('run' in c)
      it(`${file}: accepted as the cluster suite applies it`, () => {
        const o = rewriteExample(readExample(dir!, file), c.run, env);
        expect(problems(o)).toEqual([]);
      });
    else
      it(`${file}: refused (${c.why})`, () => {
        const got = problems(readExample(dir!, file));
        expect(got.join('; ')).toContain(c.refused);
      });
  }

  it('clone-datavolume.yaml as written: its null storage and its cross-namespace source are refused', () => {
    expect(problems(readExample(dir!, 'clone-datavolume.yaml'))).toEqual([
      'DataVolume/cloned-datavolume: spec.storage: Missing Data volume PVC or Storage',
      "DataVolume/cloned-datavolume: spec.source.pvc.namespace: cloning from namespace source-ns into examples is not supported: the source must be in the DataVolume's namespace",
    ]);
  });
});
