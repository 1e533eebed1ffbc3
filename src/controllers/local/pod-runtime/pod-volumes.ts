/**
 * The pod volumes the local pod runtime materializes besides emptyDirs, as kubelet's
 * volume plugins do: configMap, secret, downwardAPI and projected volumes are written into
 * `<root>/<pod uid>/volumes/kubernetes.io~<plugin>/<volume>/` with kubelet's atomic-writer
 * layout (./atomic-writer.ts: a `..<timestamp>` directory holding the files, `..data`
 * linking to it, and one link per top-level name) and file modes (item mode, else the
 * volume's defaultMode, else 0644); hostPath volumes and PVCs are resolved in
 * ./host-volumes.ts. Everything read from the API (keys, item paths, host paths) is
 * validated before it becomes a file name.
 */
import { join } from 'node:path';
import type { DownwardAPIFile, KeyToPath, Pod, PodVolume } from '../../common/pod';
import { NotFoundError } from '../../runtime/errors';
import { ConfigMapType, SecretType } from '../../runtime/resources';
import type { KubeObject, ObjectClient, ResourceType } from '../../runtime/types';
import { type PayloadFile, writeAtomic } from './atomic-writer';
import { checkHostPath, claimPath } from './host-volumes';
import type { PodCsiVolumes } from './pod-runtime-options';
import { hostPathProblem, payloadPathProblem, quoted } from './volume-paths';

/** Kubelet's default file mode of configMap, secret, downwardAPI and projected volumes (0644). */
export const DEFAULT_VOLUME_FILE_MODE = 0o644;

/** A materialized volume: its host path. */
export interface MaterializedVolume {
  hostPath: string;
}

export { hostPathProblem, payloadPathProblem, quoted } from './volume-paths';

function checkMode(mode: number | undefined, field: string): number | undefined {
  if (mode === undefined) return undefined;
  if (!Number.isInteger(mode) || mode < 0 || mode > 0o777)
    throw new Error(`${field}: ${mode} is not a file mode between 0 and 0777 (511)`);
  return mode;
}

/** Go's %q for the downward API's `key="value"` lines (ASCII escapes; other characters kept). */
function goQuote(s: string): string {
  let out = '"';
  for (const ch of s) {
    const c = ch.codePointAt(0) ?? 0;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (c < 0x20 || c === 0x7f) out += `\\x${c.toString(16).padStart(2, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/** kubelet's fieldpath.FormatMap: sorted `key="value"` lines. */
function formatMap(m: Record<string, string> | undefined): string {
  return Object.keys(m ?? {})
    .sort()
    .map((k) => `${k}=${goQuote(m![k])}`)
    .join('\n');
}

/** The value of a downward API fieldRef on `pod` (kubelet's supported volume fields). */
function fieldValue(pod: Pod, fieldPath: string, field: string): string {
  const md = pod.metadata ?? {};
  const sub = /^metadata\.(labels|annotations)\['([^']*)'\]$/.exec(fieldPath);
  if (sub) {
    const map = (sub[1] === 'labels' ? md.labels : md.annotations) ?? {};
    return map[sub[2]] ?? '';
  }
  switch (fieldPath) {
    case 'metadata.name':
      return md.name ?? '';
    case 'metadata.namespace':
      return md.namespace ?? '';
    case 'metadata.uid':
      return md.uid ?? '';
    case 'metadata.labels':
      return formatMap(md.labels);
    case 'metadata.annotations':
      return formatMap(md.annotations);
    case 'spec.nodeName':
      return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName':
      return pod.spec?.serviceAccountName ?? '';
  }
  throw new Error(
    `${field}: ${quoted(fieldPath)} is not a field this runtime projects (metadata.name, namespace, uid, labels, annotations, labels['k'], annotations['k'], spec.nodeName, spec.serviceAccountName)`,
  );
}

type KeyedData = Record<string, Buffer>;

interface KeyedObject extends KubeObject {
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
  stringData?: Record<string, string>;
}

/** Reads a ConfigMap's or Secret's data as bytes; undefined when it is missing and optional. */
async function readKeyed(
  client: ObjectClient,
  kind: 'configMap' | 'secret',
  namespace: string,
  name: string,
  optional: boolean | undefined,
  field: string,
): Promise<KeyedData | undefined> {
  if (!name) throw new Error(`${field}: names no ${kind === 'configMap' ? 'ConfigMap' : 'Secret'}`);
  let obj: KeyedObject;
  try {
    obj = await client.get<KeyedObject>(kind === 'configMap' ? ConfigMapType : SecretType, name, namespace);
  } catch (e) {
    if (e instanceof NotFoundError) {
      if (optional) return undefined;
      throw new Error(
        `${field}: ${kind === 'configMap' ? 'configmap' : 'secret'} ${quoted(`${namespace}/${name}`)} not found`,
      );
    }
    throw e;
  }
  const out: KeyedData = {};
  if (kind === 'configMap') {
    for (const [k, v] of Object.entries(obj.data ?? {})) out[k] = Buffer.from(v, 'utf8');
    for (const [k, v] of Object.entries(obj.binaryData ?? {})) out[k] = Buffer.from(v, 'base64');
  } else {
    for (const [k, v] of Object.entries(obj.data ?? {})) out[k] = Buffer.from(v, 'base64');
    // An API server folds stringData into data on write; the embedded store keeps it as written.
    for (const [k, v] of Object.entries(obj.stringData ?? {})) out[k] = Buffer.from(v, 'utf8');
  }
  return out;
}

/** Projects keyed data to files: all keys by name, or the listed items (kubelet's MakePayload). */
function keyedPayload(
  data: KeyedData | undefined,
  items: KeyToPath[] | undefined,
  defaultMode: number,
  optional: boolean | undefined,
  field: string,
  into: Map<string, PayloadFile>,
): void {
  if (!data) return;
  if (!items?.length) {
    for (const [key, value] of Object.entries(data)) {
      const problem = payloadPathProblem(key);
      if (problem) throw new Error(`${field}: key ${quoted(key)} cannot be a file name: it ${problem}`);
      into.set(key, { data: value, mode: defaultMode });
    }
    return;
  }
  items.forEach((item, j) => {
    const f = `${field}.items[${j}]`;
    const value = data[item.key];
    if (value === undefined) {
      if (optional) return;
      throw new Error(`${f}.key: ${quoted(item.key)} is not a key of the referenced object`);
    }
    const problem = payloadPathProblem(item.path);
    if (problem) throw new Error(`${f}.path: ${quoted(item.path)} ${problem}`);
    into.set(item.path, { data: value, mode: checkMode(item.mode, `${f}.mode`) ?? defaultMode });
  });
}

function downwardPayload(
  pod: Pod,
  items: DownwardAPIFile[] | undefined,
  defaultMode: number,
  field: string,
  into: Map<string, PayloadFile>,
): void {
  (items ?? []).forEach((item, j) => {
    const f = `${field}.items[${j}]`;
    const problem = payloadPathProblem(item.path);
    if (problem) throw new Error(`${f}.path: ${quoted(item.path)} ${problem}`);
    if (!item.fieldRef) throw new Error(`${f}: only fieldRef is supported (resourceFieldRef is not)`);
    const value = fieldValue(pod, item.fieldRef.fieldPath, `${f}.fieldRef.fieldPath`);
    into.set(item.path, {
      data: Buffer.from(value, 'utf8'),
      mode: checkMode(item.mode, `${f}.mode`) ?? defaultMode,
    });
  });
}

async function serviceAccountToken(
  client: ObjectClient,
  pod: Pod,
  src: { expirationSeconds?: number; audience?: string },
  field: string,
): Promise<Buffer> {
  const ns = pod.metadata?.namespace ?? 'default';
  const sa = pod.spec?.serviceAccountName || 'default';
  if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(sa))
    throw new Error(`spec.serviceAccountName: ${quoted(sa)} is not a DNS-1123 subdomain`);
  // POST /api/v1/namespaces/<ns>/serviceaccounts/<sa>/token (a core subresource; the body is authentication.k8s.io/v1).
  const tokenRequest: ResourceType = {
    group: '',
    version: 'v1',
    kind: 'TokenRequest',
    plural: `serviceaccounts/${sa}/token`,
    namespaced: true,
  };
  try {
    const tr = await client.create<KubeObject & { status?: { token?: string } }>(tokenRequest, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      metadata: { namespace: ns },
      spec: {
        expirationSeconds: src.expirationSeconds ?? 3607,
        audiences: src.audience ? [src.audience] : undefined,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata?.name, uid: pod.metadata?.uid },
      },
    } as never);
    if (!tr.status?.token) throw new Error('the TokenRequest returned no token');
    return Buffer.from(tr.status.token, 'utf8');
  } catch (e) {
    throw new Error(
      `${field}.serviceAccountToken: cannot get a token for service account ${quoted(`${ns}/${sa}`)}: ${(e as Error).message}`,
    );
  }
}

/** A pod volume's directory in kubelet's layout for `plugin` (e.g. `kubernetes.io~configmap`). */
export function podVolumeDir(podDir: string, plugin: string, volume: string): string {
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(volume))
    throw new Error(`volume name ${quoted(volume)} is not a DNS-1123 label`);
  return join(podDir, 'volumes', plugin, volume);
}

/**
 * Materializes one volume of `pod` (index `i` in spec.volumes) other than an emptyDir;
 * returns its host path, or undefined for kinds this runtime does not provide.
 * Errors name the pod, the volume's field path and the object or path at fault.
 */
export async function materializeVolume(
  client: ObjectClient | undefined,
  podDirPath: string,
  pod: Pod,
  vol: PodVolume,
  i: number,
  csi?: PodCsiVolumes,
): Promise<MaterializedVolume | undefined> {
  const field = `spec.volumes[${i}]`;
  const ns = pod.metadata?.namespace ?? 'default';
  const needClient = (): ObjectClient => {
    if (!client) throw new Error(`${field}: needs the API client to read its source`);
    return client;
  };
  if (vol.hostPath) {
    const problem = hostPathProblem(vol.hostPath.path);
    if (problem) throw new Error(`${field}.hostPath.path: ${quoted(vol.hostPath.path)} ${problem}`);
    await checkHostPath(vol.hostPath.path, vol.hostPath.type, `${field}.hostPath`);
    return { hostPath: vol.hostPath.path };
  }
  if (vol.persistentVolumeClaim)
    return claimPath(
      needClient(),
      ns,
      vol.persistentVolumeClaim.claimName,
      `${field}.persistentVolumeClaim`,
      {
        csi,
        podDir: podDirPath,
        readOnly: vol.persistentVolumeClaim.readOnly,
      },
    );
  const files = new Map<string, PayloadFile>();
  let plugin: string;
  if (vol.configMap) {
    plugin = 'kubernetes.io~configmap';
    const c = vol.configMap;
    const mode = checkMode(c.defaultMode, `${field}.configMap.defaultMode`) ?? DEFAULT_VOLUME_FILE_MODE;
    const data = await readKeyed(needClient(), 'configMap', ns, c.name, c.optional, `${field}.configMap`);
    keyedPayload(data, c.items, mode, c.optional, `${field}.configMap`, files);
  } else if (vol.secret) {
    plugin = 'kubernetes.io~secret';
    const s = vol.secret;
    const mode = checkMode(s.defaultMode, `${field}.secret.defaultMode`) ?? DEFAULT_VOLUME_FILE_MODE;
    const data = await readKeyed(needClient(), 'secret', ns, s.secretName, s.optional, `${field}.secret`);
    keyedPayload(data, s.items, mode, s.optional, `${field}.secret`, files);
  } else if (vol.downwardAPI) {
    plugin = 'kubernetes.io~downward-api';
    const mode =
      checkMode(vol.downwardAPI.defaultMode, `${field}.downwardAPI.defaultMode`) ?? DEFAULT_VOLUME_FILE_MODE;
    downwardPayload(pod, vol.downwardAPI.items, mode, `${field}.downwardAPI`, files);
  } else if (vol.projected) {
    plugin = 'kubernetes.io~projected';
    const mode =
      checkMode(vol.projected.defaultMode, `${field}.projected.defaultMode`) ?? DEFAULT_VOLUME_FILE_MODE;
    for (const [j, src] of (vol.projected.sources ?? []).entries()) {
      const f = `${field}.projected.sources[${j}]`;
      if (src.configMap) {
        const data = await readKeyed(
          needClient(),
          'configMap',
          ns,
          src.configMap.name,
          src.configMap.optional,
          `${f}.configMap`,
        );
        keyedPayload(data, src.configMap.items, mode, src.configMap.optional, `${f}.configMap`, files);
      } else if (src.secret) {
        const data = await readKeyed(
          needClient(),
          'secret',
          ns,
          src.secret.name,
          src.secret.optional,
          `${f}.secret`,
        );
        keyedPayload(data, src.secret.items, mode, src.secret.optional, `${f}.secret`, files);
      } else if (src.downwardAPI) {
        downwardPayload(pod, src.downwardAPI.items, mode, `${f}.downwardAPI`, files);
      } else if (src.serviceAccountToken) {
        const problem = payloadPathProblem(src.serviceAccountToken.path);
        if (problem)
          throw new Error(
            `${f}.serviceAccountToken.path: ${quoted(src.serviceAccountToken.path)} ${problem}`,
          );
        // Like kubelet: the token gets the volume's mode (0644 unless defaultMode says otherwise).
        files.set(src.serviceAccountToken.path, {
          data: await serviceAccountToken(needClient(), pod, src.serviceAccountToken, f),
          mode,
        });
      } else {
        throw new Error(`${f}: a projection this runtime does not support`);
      }
    }
  } else {
    return undefined;
  }
  const dir = podVolumeDir(podDirPath, plugin, vol.name);
  await writeAtomic(dir, files);
  return { hostPath: dir };
}
