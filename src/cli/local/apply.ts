/**
 * Applies manifests to the local store as `kubectl apply` would after admission: each
 * object is loaded, defaulted and validated by the same pure functions as virt-api's
 * webhooks, its container images are checked against the local image store, then it is
 * created, or its spec replaced when it exists.
 */
import { createClusterConfig } from '../../api/config/cluster-config';
import { formatFieldError } from '../../api/errors';
import type { VirtualMachine, VirtualMachineInstance } from '../../api/generated/types';
import { loadManifestFile } from '../../api/manifest/load';
import { type ApiObject, admit } from '../../api/validation/admission';
import { builtinTypes, kubevirtTypes } from '../../controllers/runtime/resources';
import type { KubeObject, ObjectClient, ResourceType } from '../../controllers/runtime/types';
import type { ImageStore } from './images';

/** One applied object. */
export interface AppliedObject {
  kind: string;
  namespace?: string;
  name: string;
  action: 'created' | 'configured' | 'unchanged';
}

function typeOf(kind: string): ResourceType | undefined {
  return [...kubevirtTypes, ...builtinTypes].find((t) => t.kind === kind);
}

/** Loads and admits every object of `files`; throws one error listing every problem. */
export async function loadAndAdmit(
  files: string[],
  images: ImageStore,
  useEmulation = true,
): Promise<ApiObject[]> {
  const config = createClusterConfig({ developerConfiguration: { useEmulation } });
  const problems: string[] = [];
  const out: ApiObject[] = [];
  for (const file of files) {
    const loaded = await loadManifestFile(file);
    problems.push(...loaded.errors.map((e) => e.message));
    for (const o of loaded.objects) {
      const obj = o.object as ApiObject;
      const id = `${o.kind}/${obj.metadata?.name ?? '<unnamed>'}`;
      if (!typeOf(o.kind)) {
        problems.push(`${file}: ${id}: kind ${o.kind} is not served in local mode`);
        continue;
      }
      const { object, errors } = admit(obj, config);
      if (errors.length > 0) {
        problems.push(
          ...errors.map((e) => `${file}: ${formatFieldError(o.kind, obj.metadata?.name ?? '<unnamed>', e)}`),
        );
        continue;
      }
      if (o.kind === 'VirtualMachine' || o.kind === 'VirtualMachineInstance') {
        try {
          images.checkReferences(object as unknown as VirtualMachine | VirtualMachineInstance, id);
        } catch (e) {
          problems.push(`${file}: ${(e as Error).message}`);
          continue;
        }
      }
      out.push(object);
    }
  }
  if (problems.length > 0) throw new Error(problems.join('\n'));
  return out;
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
