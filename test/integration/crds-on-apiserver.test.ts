/**
 * The generated CRDs (crds/*.yaml) on the real kube-apiserver, through the SDK's own
 * client library (@kubernetes/client-node, not kubectl): every CRD is created and becomes
 * Established, every document of the fixture manifests (and of upstream's examples, where
 * present) is created object by object exactly as written (no loader in between), and
 * each object read back from the server still holds every field the manifest set, so the server neither rejected nor pruned anything
 * our schemas should allow. An object our schema must refuse is refused with its field
 * path. test/api/crds/apply.test.ts covers the kubectl path, short names and columns.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import {
  ApiException,
  ApiextensionsV1Api,
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  loadAllYaml,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { fixtureFiles, fixturesDir } from '../support/fixtures';
import { integration } from '../support/integration';
import { available, sharedControlPlane, unavailableReason } from '../support/kube';
import { describeUpstream } from '../support/upstream';

const repoRoot = path.resolve(import.meta.dirname, '../..');
const crdsDir = path.join(repoRoot, 'crds');

function crdFiles(): string[] {
  if (!existsSync(crdsDir)) return [];
  return readdirSync(crdsDir)
    .filter((f) => f.endsWith('.yaml') && f !== 'all.yaml')
    .sort();
}

const haveCrds = crdFiles().length > 0;
const run = integration(
  'kube-apiserver (CRDs through client-node)',
  available() && haveCrds,
  available() ? `no generated CRDs in ${crdsDir} (npm run gen:crds)` : unavailableReason,
);

interface Example {
  file: string;
  index: number;
  object: KubernetesObject & Record<string, unknown>;
}

/** Every document of a folder of manifests, parsed as plain YAML. */
function loadExamples(dir: string): Example[] {
  const out: Example[] = [];
  for (const file of fixtureFiles(dir)) {
    parseAllDocuments(readFileSync(path.join(dir, file), 'utf8')).forEach((doc, index) => {
      if (doc.errors.length > 0) throw new Error(`${file} document ${index}: ${doc.errors[0].message}`);
      const object = doc.toJS() as Example['object'] | null;
      if (object) out.push({ file, index, object });
    });
  }
  return out;
}

/** Paths set in `sent` that are missing from (or differ in) `got`; extra fields in `got` are defaults. */
function missingPaths(sent: unknown, got: unknown, at: string): string[] {
  if (got === undefined) return [`${at}: missing`];
  if (sent === null || typeof sent !== 'object') {
    return sent === got || String(sent) === String(got)
      ? []
      : [`${at}: sent ${JSON.stringify(sent)}, got ${JSON.stringify(got)}`];
  }
  if (got === null || typeof got !== 'object') return [`${at}: missing`];
  if (Array.isArray(sent)) {
    if (!Array.isArray(got) || got.length !== sent.length) return [`${at}: array changed`];
    return sent.flatMap((v, i) => missingPaths(v, got[i], `${at}[${i}]`));
  }
  return Object.entries(sent as Record<string, unknown>).flatMap(([k, v]) =>
    missingPaths(v, (got as Record<string, unknown>)[k], `${at}.${k}`),
  );
}

function errorText(err: unknown): string {
  if (err instanceof ApiException)
    return `${err.code} ${typeof err.body === 'string' ? err.body : JSON.stringify(err.body)}`;
  return String(err);
}

describe.runIf(run)('generated CRDs on a real kube-apiserver (client-node)', () => {
  const ns = `kvts-crd-sdk-${process.pid}`;
  const kc = new KubeConfig();
  let objects: KubernetesObjectApi;
  let crdNames: string[] = [];
  const crdFailures: string[] = [];

  beforeAll(async () => {
    kc.loadFromFile((await sharedControlPlane()).kubeconfigPath);
    const ext = kc.makeApiClient(ApiextensionsV1Api);
    for (const file of crdFiles()) {
      // loadAllYaml deserializes into client-node's typed model: a raw object would lose
      // every key the model spells differently (x-kubernetes-int-or-string, $ref, ...).
      const crd = loadAllYaml(
        readFileSync(path.join(crdsDir, file), 'utf8'),
      )[0] as V1CustomResourceDefinition;
      crdNames.push(crd.metadata?.name ?? file);
      try {
        await ext.createCustomResourceDefinition({ body: crd });
      } catch (err) {
        // Another test file (the kubectl path) may have installed the same CRD first.
        if (!(err instanceof ApiException && err.code === 409))
          crdFailures.push(`${file}: ${errorText(err)}`);
      }
    }
    crdNames = crdNames.sort();
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: ns } } });
    // Built after the CRDs exist: the client caches API discovery.
    objects = KubernetesObjectApi.makeApiClient(kc);
  });

  it('establishes every CRD with a structural schema', async () => {
    expect(crdFailures).toEqual([]);
    const ext = kc.makeApiClient(ApiextensionsV1Api);
    const deadline = Date.now() + 60_000;
    let pending = crdNames;
    while (pending.length > 0 && Date.now() < deadline) {
      const list = await ext.listCustomResourceDefinition();
      const established = new Set(
        list.items
          .filter((c) => c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True'))
          .map((c) => c.metadata?.name),
      );
      pending = crdNames.filter((n) => !established.has(n));
      if (pending.length > 0) await new Promise((r) => setTimeout(r, 200));
    }
    expect(pending).toEqual([]);
    const list = await ext.listCustomResourceDefinition();
    const nonStructural = list.items
      .filter((c) =>
        c.status?.conditions?.some((x) => x.type === 'NonStructuralSchema' && x.status === 'True'),
      )
      .map((c) => c.metadata?.name);
    expect(nonStructural).toEqual([]);
    // KubeVirt's 18 kinds and CDI's 4 (DataVolume, DataSource, StorageProfile, CDIConfig).
    expect(crdNames.length).toBe(22);
    expect(crdNames.filter((n) => n?.endsWith('.cdi.kubevirt.io'))).toHaveLength(4);
  });

  /** Creates every document of a folder in a namespace; returns what went missing or failed. */
  const admitsAll = async (dir: string, namespace: string) => {
    const examples = loadExamples(dir);
    const failures: string[] = [];
    let kubevirtObjects = 0;
    const seen = new Set<string>();
    for (const ex of examples) {
      const where = `${ex.file}#${ex.index} ${ex.object.kind} ${ex.object.metadata?.name}`;
      const body = structuredClone(ex.object);
      // One namespace (cluster-scoped kinds ignore it). Two of upstream's examples share
      // a name (vmi-fedora): the later one gets a suffix, the rest is sent as written.
      const key = `${ex.object.kind}/${ex.object.metadata?.name}`;
      const name = seen.has(key)
        ? `${ex.object.metadata?.name}-${ex.index}-${seen.size}`
        : ex.object.metadata?.name;
      seen.add(key);
      body.metadata = { ...body.metadata, name, namespace };
      try {
        const created = (await objects.create(body)) as Record<string, unknown>;
        if (String(ex.object.apiVersion).includes('kubevirt.io')) kubevirtObjects++;
        for (const key of Object.keys(ex.object)) {
          if (key === 'metadata' || key === 'status') continue;
          failures.push(...missingPaths(ex.object[key], created[key], `${where}: ${key}`));
        }
        const labels = ex.object.metadata?.labels ?? {};
        failures.push(
          ...missingPaths(
            labels,
            (created.metadata as KubernetesObject['metadata'])?.labels ?? {},
            `${where}: metadata.labels`,
          ),
        );
      } catch (err) {
        failures.push(`${where}: ${errorText(err)}`);
      }
    }
    return { examples, failures, kubevirtObjects };
  };

  /** Every object arrived intact, and every KubeVirt one went through the CRDs. */
  const expectAllAdmitted = (r: Awaited<ReturnType<typeof admitsAll>>, minimum: number) => {
    expect(r.failures).toEqual([]);
    expect(r.kubevirtObjects).toBe(
      r.examples.filter((e) => String(e.object.apiVersion).includes('kubevirt.io')).length,
    );
    expect(r.kubevirtObjects).toBeGreaterThanOrEqual(minimum);
  };

  it('admits every fixture object unchanged, without pruning a field', async () => {
    expectAllAdmitted(await admitsAll(fixturesDir, ns), 45);
  });

  describeUpstream('upstream examples on the API server', (upstream) => {
    it('admits every upstream example object unchanged, without pruning a field', async () => {
      const upstreamNs = `${ns}-upstream`;
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: upstreamNs } } });
      expectAllAdmitted(await admitsAll(upstream.examplesDir, upstreamNs), 44);
    });
  });

  it('would notice pruning: an unknown field is dropped by the server and reported missing', async () => {
    const vm = {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: 'pruned-field', namespace: ns },
      spec: { runStrategy: 'Halted', template: { spec: { domain: { devices: {}, notAField: true } } } },
    };
    const created = (await objects.create(structuredClone(vm))) as Record<string, unknown>;
    expect(missingPaths(vm.spec, created.spec, 'spec')).toEqual([
      'spec.template.spec.domain.notAField: missing',
    ]);
  });

  it('refuses a VirtualMachine with a wrongly typed field, naming the field path', async () => {
    const bad = {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: 'bad-type', namespace: ns },
      spec: {
        runStrategy: 'Always',
        template: { spec: { domain: { devices: {}, cpu: { cores: 'four' } } } },
      },
    };
    const err = await objects.create(bad).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiException);
    expect((err as ApiException<unknown>).code).toBe(422);
    expect(errorText(err)).toContain('spec.template.spec.domain.cpu.cores');
  });
});
