/**
 * Applies manifests to the local store as `kubectl apply` would after admission: each
 * object is loaded, defaulted and validated by the same pure functions as virt-api's
 * webhooks, its container images are checked against the local image store, then it is
 * created, or its spec replaced when it exists. A VM naming an instance type or preference
 * is validated expanded with it, found among the batch's own objects or else in the store,
 * as virt-api's webhook looks it up.
 */
import { createClusterConfig, mergeConfiguration } from '../../api/config/cluster-config';
import { formatFieldError } from '../../api/errors';
import type { KubeVirt, VirtualMachine, VirtualMachineInstance } from '../../api/generated/types';
import {
  createInstancetypeCatalog,
  type InstancetypeCatalog,
  InstancetypeKinds,
} from '../../api/instancetype/catalog';
import { loadManifestFile } from '../../api/manifest/load';
import { type ApiObject, admit } from '../../api/validation/admission';
import { inferMatchers } from '../../controllers/common/instancetype-infer';
import { pickKubeVirt } from '../../controllers/config/kubevirt-config';
import { builtinTypes, KubeVirtType, kubevirtTypes } from '../../controllers/runtime/resources';
import type { KubeObject, ObjectClient, ResourceType } from '../../controllers/runtime/types';
import { referencedObjects, referencesInstancetype } from '../../controllers/virt-api/instancetype-lookup';
import { terminalText } from '../terminal-text';
import type { ImageStore } from './images';
import { localConfigDefaults } from './local-config';
import { localStorageTypes } from './local-storage';

/** One applied object. */
export interface AppliedObject {
  kind: string;
  namespace?: string;
  name: string;
  action: 'created' | 'configured' | 'unchanged';
}

function typeOf(kind: string): ResourceType | undefined {
  return [...kubevirtTypes, ...builtinTypes, ...localStorageTypes].find((t) => t.kind === kind);
}

const instancetypeKinds: readonly string[] = Object.values(InstancetypeKinds);

/** Admission order: KubeVirt resources, then instance types and preferences, then the rest. */
function rank(kind: string | undefined): number {
  return kind === 'KubeVirt' ? 0 : instancetypeKinds.includes(kind ?? '') ? 1 : 2;
}

/**
 * The VM or VMI (or the one a ReplicaSet's or pool's template makes) whose images must be
 * in the image store, with the field path it sits at.
 */
function imageHolder(
  object: ApiObject,
  id: string,
): { obj: VirtualMachine | VirtualMachineInstance; path: string } | undefined {
  const spec = object.spec as Record<string, { spec?: unknown }> | undefined;
  switch (object.kind) {
    case 'VirtualMachine':
    case 'VirtualMachineInstance':
      return { obj: object as unknown as VirtualMachine, path: id };
    case 'VirtualMachineInstanceReplicaSet':
      return {
        obj: { kind: 'VirtualMachineInstance', spec: spec?.template?.spec } as VirtualMachineInstance,
        path: `${id}.spec.template`,
      };
    case 'VirtualMachinePool':
      return {
        obj: { kind: 'VirtualMachine', spec: spec?.virtualMachineTemplate?.spec } as VirtualMachine,
        path: `${id}.spec.virtualMachineTemplate`,
      };
    default:
      return undefined;
  }
}

/**
 * The instance types and preferences `vm` is admitted with: those of the batch admitted so
 * far (they win: applying them replaces the stored ones) and those of `stored`. Without a
 * store, a VM naming one the batch lacks is admitted unexpanded (it may be stored already:
 * `up` admits again once its store is open).
 */
async function catalogFor(
  vm: VirtualMachine,
  admitted: ApiObject[],
  stored: ObjectClient | undefined,
): Promise<InstancetypeCatalog | undefined> {
  if (!referencesInstancetype(vm)) return undefined;
  const batch = admitted.filter((x) => instancetypeKinds.includes(x.kind ?? ''));
  const catalog = createInstancetypeCatalog([
    ...(stored ? await referencedObjects(stored, vm) : []),
    ...batch,
  ]);
  if (stored) return catalog;
  const ns = vm.metadata?.namespace ?? 'default';
  const { instancetype, preference } = vm.spec ?? {};
  const resolved =
    (!instancetype?.name || catalog.findInstancetype(instancetype, ns)) &&
    (!preference?.name || catalog.findPreference(preference, ns));
  return resolved ? catalog : undefined;
}

/**
 * Loads and admits every object of `files`; throws one error listing every problem.
 * Admission uses the cluster configuration of a KubeVirt resource among `files` (taken as
 * upstream's components take it), else of `current` (the one local mode already runs
 * with), else upstream's defaults; emulation always follows `useEmulation`. A VM's
 * instance type and preference come from the batch (those admitted), else from `stored`
 * (the running local mode's store); with a store, one found in neither fails the VM with
 * upstream's `Failure to find instancetype` at `spec.instancetype`. The result is ordered KubeVirt
 * resources, instance types and preferences, the rest, so each is in place before what
 * uses it.
 */
export async function loadAndAdmit(
  files: string[],
  images: ImageStore,
  useEmulation = true,
  current?: KubeVirt,
  stored?: ObjectClient,
): Promise<ApiObject[]> {
  const problems: string[] = [];
  const loadedFiles = [];
  for (const file of files) {
    const loaded = await loadManifestFile(file);
    problems.push(...loaded.errors.map((e) => e.message));
    loadedFiles.push({ file, objects: loaded.objects });
  }
  const batch = loadedFiles.flatMap((f) =>
    f.objects.filter((o) => o.kind === 'KubeVirt').map((o) => o.object),
  );
  const kv = pickKubeVirt(batch as KubeVirt[]) ?? current;
  const config = createClusterConfig(
    mergeConfiguration(mergeConfiguration(localConfigDefaults(), kv?.spec?.configuration), {
      developerConfiguration: { useEmulation },
    }),
  );
  const out: ApiObject[] = [];
  // Instance types and preferences first: the VMs of the batch are expanded with them.
  const queue = loadedFiles
    .flatMap(({ file, objects }) => objects.map((o) => ({ file, o })))
    .sort((a, b) => rank(a.o.kind) - rank(b.o.kind));
  for (const { file, o } of queue) {
    let obj = o.object as ApiObject;
    const id = `${o.kind}/${obj.metadata?.name ?? '<unnamed>'}`;
    if (!typeOf(o.kind)) {
      problems.push(`${file}: ${id}: kind ${o.kind} is not served in local mode`);
      continue;
    }
    // As virt-api's mutating webhook: a matcher naming a volume is inferred from the stored
    // claim (or DataVolume, DataSource); without a store, `up` admits again once it is open.
    if (o.kind === 'VirtualMachine' && stored) {
      const inferred = await inferMatchers(stored, obj as unknown as VirtualMachine);
      if (inferred.errors.length > 0) {
        const name = obj.metadata?.name ?? '<unnamed>';
        problems.push(...inferred.errors.map((e) => `${file}: ${formatFieldError(o.kind, name, e)}`));
        continue;
      }
      obj = inferred.vm as unknown as ApiObject;
    }
    const instancetypes =
      o.kind === 'VirtualMachine'
        ? await catalogFor(obj as unknown as VirtualMachine, out, stored)
        : undefined;
    const { object, errors } = admit(obj, config, { instancetypes });
    if (errors.length > 0) {
      problems.push(
        ...errors.map((e) => `${file}: ${formatFieldError(o.kind, obj.metadata?.name ?? '<unnamed>', e)}`),
      );
      continue;
    }
    const template = imageHolder(object, id);
    if (template) {
      try {
        images.checkReferences(template.obj, template.path);
      } catch (e) {
        problems.push(`${file}: ${(e as Error).message}`);
        continue;
      }
    }
    out.push(object);
  }
  // Each problem quotes manifest values: escaped and cut before it reaches a terminal.
  if (problems.length > 0) throw new Error(problems.map((p) => terminalText(p)).join('\n'));
  return out;
}

/** The KubeVirt resource a running local mode takes its configuration from, if any. */
export async function storedKubeVirt(client: ObjectClient): Promise<KubeVirt | undefined> {
  const list = await client.list<KubeVirt & KubeObject>(KubeVirtType).catch(() => undefined);
  return pickKubeVirt(list?.items ?? []);
}

/** Creates each object, or replaces the spec (labels, annotations) of an existing one. */
export async function applyObjects(client: ObjectClient, objects: ApiObject[]): Promise<AppliedObject[]> {
  const out: AppliedObject[] = [];
  for (const obj of objects) {
    const type = typeOf(obj.kind ?? '') as ResourceType;
    const name = obj.metadata?.name ?? '';
    const namespace = type.namespaced ? (obj.metadata?.namespace ?? 'default') : undefined;
    const next = { ...obj, metadata: { ...obj.metadata, ...(namespace ? { namespace } : {}) } } as KubeObject;
    const cur = await client.get<KubeObject>(type, name, namespace).catch(() => undefined);
    if (!cur) {
      await client.create(type, next);
      out.push({ kind: obj.kind ?? '', namespace, name, action: 'created' });
      continue;
    }
    const { status: _s, ...curRest } = cur as KubeObject & { status?: unknown };
    const { status: _n, ...nextRest } = next as KubeObject & { status?: unknown };
    const same =
      JSON.stringify({ ...curRest, metadata: undefined }) ===
      JSON.stringify({ ...nextRest, metadata: undefined });
    if (same) {
      out.push({ kind: obj.kind ?? '', namespace, name, action: 'unchanged' });
      continue;
    }
    await client.update(type, {
      ...cur,
      ...nextRest,
      metadata: { ...cur.metadata, labels: next.metadata?.labels, annotations: next.metadata?.annotations },
    } as KubeObject);
    out.push({ kind: obj.kind ?? '', namespace, name, action: 'configured' });
  }
  return out;
}
