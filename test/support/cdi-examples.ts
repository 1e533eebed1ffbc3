/**
 * CDI's 26 example manifests (`$KUBEVIRT_TS_CDI_DIR/examples`, else the shared reference folder: ./upstream.ts)
 * and what kubevirt-ts does with each: the DataVolumes that need no outside network run on
 * the cluster (test/cluster/cdi-examples.test.ts) with their outside URLs pointed at the
 * test's own sources; the rest are refused by validation with a reason, or are not
 * DataVolumes and say why they are not applied. test/api/cdi/cdi-examples.test.ts checks
 * the table against the files and validation. Like the KubeVirt examples, these are
 * optional inputs: where the folder is absent the suites skip, saying so.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { referenceInputDir, referenceInputHint } from './upstream';

/** The examples folder, or undefined when absent. */
export function cdiExamplesDir(): string | undefined {
  const dir = path.join(referenceInputDir('KUBEVIRT_TS_CDI_DIR', 'cdi'), 'examples');
  return existsSync(dir) ? dir : undefined;
}

/** Why a suite over the examples skips. */
export const needsCdiExamples = `(needs CDI's examples: ${referenceInputHint('KUBEVIRT_TS_CDI_DIR', 'cdi', '/examples')})`;

/** What the test changes in an example before applying it (only outside addresses and the like). */
export interface Rewrite {
  /** An http source's URL: the test's disk server (`<server>/boot.qcow2`). */
  httpUrl?: true;
  /** A registry URL: the tiny guest's containerDisk in the node's image store. */
  registryUrl?: true;
  /** A storageClassName of the author's cluster (`local`, `hdd`): dropped for the default class. */
  dropStorageClass?: true;
  /** A metadata.name, where two examples share one. */
  name?: string;
  /** A clone source's namespace: the test's. */
  sourceNamespace?: true;
  /** `storage: null`: `{}` (see the `refused` note of that example). */
  emptyStorage?: true;
  /** A clone source's name: another example's DataVolume. */
  sourceName?: string;
}

export type ExampleCase =
  /** A DataVolume (or a VM's template) that must reach Succeeded on the cluster. */
  | { run: Rewrite; needs?: string[]; why?: string }
  /** Validation refuses it: the message holds `reason`. */
  | { refused: string; why: string }
  /** Not a DataVolume, or another helper's; not applied on its own. */
  | { skip: string };

/** Every example, by file name. */
export const CDI_EXAMPLES: Readonly<Record<string, ExampleCase>> = {
  'blank-image-datavolume.yaml': { run: {} },
  'cert-configmap.yaml': {
    skip: "a ConfigMap holding a placeholder certificate, for an https import's certConfigMap (no https server here; certConfigMap is covered by the importer's tests)",
  },
  'clone-block-datavolume.yaml': {
    run: { sourceNamespace: true },
    needs: ['import-kubevirt-block-datavolume.yaml'],
  },
  'clone-datavolume.yaml': {
    run: { sourceNamespace: true, emptyStorage: true, sourceName: 'blank-image-datavolume' },
    needs: ['blank-image-datavolume.yaml'],
    why: 'as written it has `storage:` null, which the API server drops and CDI\'s webhook refuses ("Missing Data volume PVC"), and its source is in namespace source-ns (cross-namespace clones are refused here); run with `storage: {}` from a source DataVolume of the test\'s namespace',
  },
  'endpoint-secret.yaml': {
    skip: 'the Secret import-kubevirt-datavolume-secret.yaml names: applied with it',
  },
  'example-cdiconfig.yaml': {
    skip: "changes the cluster's one CDIConfig (uploadProxyURLOverride, the upload proxy's: s-upload's part)",
  },
  'import-archive-block-datavolume.yaml': {
    refused: 'contentType archive is not supported yet',
    why: 'archive (tar) imports are not built',
  },
  'import-archive-datavolume.yaml': {
    refused: 'contentType archive is not supported yet',
    why: 'archive (tar) imports are not built',
  },
  'import-block-pv.yaml': {
    skip: 'a hand-made `local` PersistentVolume on node01 at /dev/loop10, for a cluster without a provisioner: volumes here come from the CSI driver',
  },
  'import-kubevirt-block-datavolume.yaml': { run: { httpUrl: true, dropStorageClass: true } },
  'import-kubevirt-datavolume-gcs-secret.yaml': { skip: 'the Secret of the GCS example (refused below)' },
  'import-kubevirt-datavolume-gcs.yaml': {
    refused: 'GCS sources are not supported',
    why: 'Google Cloud Storage is an outside network',
  },
  'import-kubevirt-datavolume-secret.yaml': {
    run: { httpUrl: true, name: 'my-data-volume-secret' },
    needs: ['endpoint-secret.yaml'],
    why: 'it has the same name as import-kubevirt-datavolume.yaml',
  },
  'import-kubevirt-datavolume-skip-tls.yaml': {
    refused: 'skipping TLS verification is not supported',
    why: "insecureSkipVerify is not built (give the server's CA with certConfigMap)",
  },
  'import-kubevirt-datavolume.yaml': { run: { httpUrl: true } },
  'registry-image-block-datavolume.yaml': {
    run: { registryUrl: true, name: 'registry-image-block-datavolume' },
    why: 'it has the same name as registry-image-datavolume.yaml',
  },
  'registry-image-datavolume.yaml': { run: { registryUrl: true } },
  'upload-block-datavolume-token.yaml': { skip: "upload: s-upload's part of issue 25" },
  'upload-block-datavolume.yaml': { skip: "upload: s-upload's part of issue 25" },
  'upload-datavolume-token.yaml': { skip: "upload: s-upload's part of issue 25" },
  'upload-datavolume.yaml': { skip: "upload: s-upload's part of issue 25" },
  'vddk-args-annotation.yaml': { refused: 'VDDK (VMware) sources are not supported', why: 'VMware' },
  'vddk-args-configmap.yaml': { skip: 'the ConfigMap of the VDDK examples (refused)' },
  'vddk-args-field.yaml': { refused: 'VDDK (VMware) sources are not supported', why: 'VMware' },
  'vddk-configmap.yaml': { skip: 'the ConfigMap of the VDDK examples (refused)' },
  'vm-dv.yaml': { run: { httpUrl: true, dropStorageClass: true } },
};

/** The example files present, sorted. */
export function cdiExampleFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .sort();
}

// biome-ignore lint/suspicious/noExplicitAny: manifests of any shape, rewritten field by field
type Obj = Record<string, any>;

/** The example's one object. */
export function readExample(dir: string, file: string): Obj {
  return parse(readFileSync(path.join(dir, file), 'utf8')) as Obj;
}

/** The DataVolume specs in `o` (a DataVolume's, or a VM's templates'), to rewrite in place. */
function dvSpecs(o: Obj): Obj[] {
  if (o.kind === 'DataVolume') return [o.spec];
  if (o.kind === 'VirtualMachine') return (o.spec?.dataVolumeTemplates ?? []).map((t: Obj) => t.spec);
  return [];
}

/** The example as the cluster test applies it in `namespace`. */
export function rewriteExample(
  o: Obj,
  r: Rewrite,
  env: { namespace: string; server: string; containerDisk: string },
): Obj {
  const out = structuredClone(o);
  out.metadata = { ...out.metadata, namespace: env.namespace, ...(r.name ? { name: r.name } : {}) };
  for (const spec of dvSpecs(out)) {
    if (r.httpUrl && spec.source?.http) spec.source.http.url = `${env.server}/boot.qcow2`;
    if (r.registryUrl && spec.source?.registry) spec.source.registry.url = env.containerDisk;
    if (r.sourceNamespace && spec.source?.pvc) spec.source.pvc.namespace = env.namespace;
    if (r.sourceName && spec.source?.pvc) spec.source.pvc.name = r.sourceName;
    if (r.emptyStorage && spec.storage == null && !spec.pvc) spec.storage = {};
    const target = spec.storage ?? spec.pvc;
    if (r.dropStorageClass && target) delete target.storageClassName;
  }
  return out;
}

/** The DataVolume names an applied example makes (its own, or its VM's templates'). */
export function exampleDataVolumes(o: Obj): string[] {
  if (o.kind === 'DataVolume') return [o.metadata?.name];
  if (o.kind === 'VirtualMachine')
    return (o.spec?.dataVolumeTemplates ?? []).map((t: Obj) => t.metadata?.name);
  return [];
}
